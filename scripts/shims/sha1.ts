/**
 * `sha.js/sha1.js` for the bundles (scripts/build-cli.ts, scripts/build-action.ts alias it here):
 * isomorphic-git hashes with `new Hash().update(buffer).digest(encoding)` (index.js shasumSync and
 * _pack). sha.js 2.4.12 computes SHA-1 in JavaScript and pulls in ~20 small packages (to-buffer,
 * typed-array-buffer, call-bound, get-intrinsic…) whose loading cost ~30 ms at every start of the
 * CLI; Node's crypto computes the same digest natively and is already loaded.
 */
import { createHash, type Hash } from 'node:crypto';

export default function Sha1(): Hash {
  return createHash('sha1');
}
