// The conformance suite against the embedded memory:// broker, run from the package export
// `tidings/testing` (dist/, built by `npm test`) as a third-party driver would run it.
import { memoryConformanceSubject, runConformanceSuite } from 'tidings/testing';

runConformanceSuite(memoryConformanceSubject());
