#!/usr/bin/env node
// The `tidings` binary entry (package.json "bin"): runs the CLI and sets the exit status.
import { runCli } from './run-cli.js';

const code = await runCli(process.argv.slice(2));
process.exitCode = code;
// A broker library that leaves a handle open must not keep a finished command alive.
setTimeout(() => process.exit(code), 2000).unref();
