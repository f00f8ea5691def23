// What counts as a secret-looking key, for every redaction in tidings: URL query values
// (transport-url.ts) and notification contexts (notify/) hide the same keys.

/** Keys whose values are replaced by `***` (in the spirit of oslo strutils `_SANITIZE_KEYS`, matched anywhere in the key). */
export const SECRET_KEY_PATTERN = /pass(word|wd|phrase)?|pswd|secret|token|credential|private_?key|api_?key|access_?key|encryption_?key|fernet_?key|ssl_?key|cookie|authorization/i;

/** What a hidden value is shown as, in URLs, contexts and error messages. */
export const REDACTED = '***';
