// Character codes of strings that came from the wire, read on every message.

const charCodeAt = String.prototype.charCodeAt;

/**
 * `s.charCodeAt(i)`, with the method called as a known function. Strings from the wire come in
 * several of V8's representations (parsed, sliced, concatenated, internalized), so a site that
 * reads them as `s.charCodeAt(i)` sees too many shapes and looks the method up with a megamorphic
 * load at every call: ~120 instructions each, several thousand per RPC call where a loop does it
 * (bench/README.md). Called this way, the optimizing compiler inlines the read.
 */
export function codeAt(s: string, i: number): number {
  return charCodeAt.call(s, i);
}
