// ns per request of a Node.js server verifying terminal requests (issue 42, goal 1), written the natural way: the
// body JSON.parse'd, its data split on ":", the keys derived (tests/node_envelope.js's derive: MD5 of business code
// + serial + the UTC minute...), AES-256-CBC deciphered, the plaintext JSON.parse'd, key set on a copy,
// JSON.stringify, Base64, SHA-512 (tests/node_envelope.js's signature), and crypto.timingSafeEqual against the
// Authorization header's hash; the timestamp header checked first (10 digits, within 300 s of now).
// Input (stdin, one JSON text): {"businessCode", "terminalSerial", "now", "seconds",
//   "requests": {"<name>": {"headers": {"<lower-case name>": "<value>", ...}, "body": "<text>"}, ...}}
// Output (stdout, one JSON line): {"<name>": <ns per request, the best of 3 blocks>, ...}. Every request is verified
// once before any timing, and a request it refuses is an error (exit 1): a verify that refuses everything is fast.
// With --check: nothing timed; {"<name>": {"ok": true} | {"ok": false, "reason": "..."}, ...} (the tests).
'use strict';
const crypto = require('crypto');
const path = require('path');
const { derive, signature } = require(path.join(__dirname, '..', 'tests', 'node_envelope.js'));
const { timed, calibrated } = require(path.join(__dirname, 'node_seal.js'));

const BASIC = 'Basic ';

// The payload of an accepted request; throws an Error saying why a request is refused.
function verify(headers, body, r) {
  const timestamp = headers.timestamp;
  if (typeof timestamp !== 'string' || !/^[0-9]{10}$/.test(timestamp)) throw new Error('timestamp not 10 digits');
  if (!(Math.abs(r.now - Number(timestamp)) <= 300)) throw new Error('timestamp outside 300 s');
  const authorization = headers.authorization;
  if (typeof authorization !== 'string' || !authorization.startsWith(BASIC)) throw new Error('no Basic hash');
  const { data } = JSON.parse(body);
  if (typeof data !== 'string') throw new Error('no data');
  const [ivHex, ctHex] = data.split(':');
  const { encodedKeyTimestamp, aesKey } = derive(r.businessCode, r.terminalSerial, Number(timestamp));
  const decipher = crypto.createDecipheriv('aes-256-cbc', Buffer.from(aesKey, 'utf8'), Buffer.from(ivHex, 'hex'));
  const text = Buffer.concat([decipher.update(Buffer.from(ctHex, 'hex')), decipher.final()]).toString('utf8');
  const payload = JSON.parse(text);
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new Error('not an object');
  const expected = Buffer.from(signature(payload, encodedKeyTimestamp).hash, 'utf8');
  const given = Buffer.from(authorization.slice(BASIC.length), 'utf8');
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
    throw new Error('signature mismatch');
  }
  return payload;
}

function verdict(request, r) {
  try {
    verify(request.headers, request.body, r);
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: String(e && e.message) };
  }
}

function main() {
  let input = '';
  process.stdin.on('data', (chunk) => { input += chunk; });
  process.stdin.on('end', () => {
    const r = JSON.parse(input);
    const names = Object.keys(r.requests);
    const verdicts = Object.fromEntries(names.map((name) => [name, verdict(r.requests[name], r)]));
    if (process.argv.includes('--check')) {
      process.stdout.write(JSON.stringify(verdicts) + '\n');
      return;
    }
    const refused = names.filter((name) => !verdicts[name].ok);
    if (refused.length) {
      process.stderr.write(`node_verify.js: refused ${refused.map((n) => `${n} (${verdicts[n].reason})`).join(', ')}\n`);
      process.exit(1);
    }
    let accepted = 0; // every timed call's payload is used: nothing for the JIT to drop
    const once = Object.fromEntries(names.map((name) => {
      const { headers, body } = r.requests[name];
      return [name, () => { if (verify(headers, body, r) !== null) accepted++; }];
    }));
    const numbers = Object.fromEntries(names.map((name) => [name, calibrated(once[name], r.seconds)]));
    const out = {};
    for (const name of names) { // the best of 3 blocks: the least disturbed by other processes
      out[name] = Math.min(...[0, 1, 2].map(() => timed(once[name], numbers[name]))) / numbers[name];
    }
    if (accepted === 0) process.exit(2);
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}

module.exports = { verify }; // benchmarks/node_verify_server.js serves it over HTTP
if (require.main === module) main();
