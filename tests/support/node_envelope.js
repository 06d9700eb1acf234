// An independent implementation of the terminal envelope (spec 5.1), as the JavaScript server
// computes it: Node's crypto and JSON.stringify, nothing from pasarela. One JSON request per line:
//   {"op": "seal", "businessCode", "terminalSerial", "timestamp", "ivHex", "plaintext"}
//     -> {"authorization", "data", "signed"}: seal requestData = JSON.parse(plaintext)
//   {"op": "verify", "businessCode", "terminalSerial", "timestamp", "authorization", "data"}
//     -> {"ok", "payload"}: what the server does with a sealed request
//   {"op": "sealText", "businessCode", "terminalSerial", "timestamp", "ivHex", "text", "signing"}
//     -> {"authorization", "data"}: the text encrypted as it is, signed "server" (JSON.stringify of
//        JSON.parse(text) with key added, what the server recomputes) or "splice" (the text itself with
//        ,"key":"..." put before its last character, as a string-splicing client signs)
//   {"op": "receive", "businessCode", "terminalSerial", "now", "method", "headers", "body" | "query"}
//     -> {"ok", "reason", "stringified", "ownKey", "ownProto"}: the server's verdict on a whole
//        HTTP request (headers by lower-case name; the body text of POST/PUT/PATCH, or the query's data of
//        GET), and, when it accepts, JSON.stringify of the payload it parsed
'use strict';
const crypto = require('crypto');
const readline = require('readline');

function pad2(n) { return String(n).padStart(2, '0'); }

function derive(businessCode, terminalSerial, timestamp) {
  const d = new Date(timestamp * 1000);
  const formattedDate = [d.getUTCFullYear(), pad2(d.getUTCMonth() + 1), pad2(d.getUTCDate()),
    pad2(d.getUTCHours()), pad2(d.getUTCMinutes())].join(':');
  const key = (businessCode + terminalSerial + formattedDate).padEnd(32, '0');
  const password = crypto.createHash('md5').update(key, 'utf8').digest('hex');
  const encodedKeyTimestamp = Buffer.from(password + String(timestamp), 'utf8').toString('base64');
  const aesKey = (String(timestamp) + '___' + password).substring(0, 32);
  return { password, encodedKeyTimestamp, aesKey };
}

function signature(requestData, encodedKeyTimestamp) {
  // a copy with an added field (spread defines own properties, so a "__proto__" member stays data)
  const dataWithKey = { ...requestData, key: encodedKeyTimestamp };
  const json = JSON.stringify(dataWithKey);
  const dataJson = Buffer.from(json, 'utf8').toString('base64');
  return { json, hash: crypto.createHash('sha512').update(dataJson, 'utf8').digest('hex') };
}

// What a Node.js gateway does per request (benchmarks/node_seal.js times it): requestData is an object.
function sealObject(requestData, businessCode, terminalSerial, timestamp, iv) {
  const { encodedKeyTimestamp, aesKey } = derive(businessCode, terminalSerial, timestamp);
  const { json, hash } = signature(requestData, encodedKeyTimestamp);
  const cipher = crypto.createCipheriv('aes-256-cbc', Buffer.from(aesKey, 'utf8'), iv);
  const ct = Buffer.concat([cipher.update(JSON.stringify(requestData), 'utf8'), cipher.final()]);
  return { authorization: 'Basic ' + hash, data: iv.toString('hex') + ':' + ct.toString('hex'), signed: json };
}

function seal(r) {
  return sealObject(JSON.parse(r.plaintext), r.businessCode, r.terminalSerial, r.timestamp,
    Buffer.from(r.ivHex, 'hex'));
}

function verify(r) {
  const { encodedKeyTimestamp, aesKey } = derive(r.businessCode, r.terminalSerial, r.timestamp);
  const [ivHex, ctHex] = r.data.split(':');
  const decipher = crypto.createDecipheriv('aes-256-cbc', Buffer.from(aesKey, 'utf8'), Buffer.from(ivHex, 'hex'));
  const text = Buffer.concat([decipher.update(Buffer.from(ctHex, 'hex')), decipher.final()]).toString('utf8');
  const payload = JSON.parse(text);
  const { hash } = signature(payload, encodedKeyTimestamp);
  return { ok: r.authorization === 'Basic ' + hash, payload };
}

function sealText(r) {
  const { encodedKeyTimestamp, aesKey } = derive(r.businessCode, r.terminalSerial, r.timestamp);
  const signed = r.signing === 'server'
    ? signature(JSON.parse(r.text), encodedKeyTimestamp).json
    : r.text.slice(0, -1) + ',"key":"' + encodedKeyTimestamp + '"}';
  const dataJson = Buffer.from(signed, 'utf8').toString('base64');
  const hash = crypto.createHash('sha512').update(dataJson, 'utf8').digest('hex');
  const iv = Buffer.from(r.ivHex, 'hex');
  const cipher = crypto.createCipheriv('aes-256-cbc', Buffer.from(aesKey, 'utf8'), iv);
  const ct = Buffer.concat([cipher.update(r.text, 'utf8'), cipher.final()]);
  return { authorization: 'Basic ' + hash, data: iv.toString('hex') + ':' + ct.toString('hex') };
}

function refused(reason) { return { ok: false, reason }; }

// The service's JavaScript server receiving a terminal request (spec 5.1): timestamp header of 10 digits
// within 300 s of its clock, data from the JSON body (or the query on GET), decipher, JSON.parse, key added,
// JSON.stringify, Base64, SHA-512, compared in constant time with the Authorization header's hash.
function receive(r) {
  const timestamp = r.headers.timestamp;
  if (typeof timestamp !== 'string' || !/^[0-9]{10}$/.test(timestamp)) return refused('timestamp not 10 digits');
  if (!(Math.abs(r.now - Number(timestamp)) <= 300)) return refused('timestamp outside 300 s');
  const authorization = r.headers.authorization;
  if (typeof authorization !== 'string' || !authorization.startsWith('Basic ')) return refused('no Basic hash');
  const data = r.method === 'GET' ? r.query : JSON.parse(r.body).data;
  if (typeof data !== 'string') return refused('no data');
  const [ivHex, ctHex] = data.split(':');
  const { encodedKeyTimestamp, aesKey } = derive(r.businessCode, r.terminalSerial, Number(timestamp));
  let text;
  try {
    const decipher = crypto.createDecipheriv('aes-256-cbc', Buffer.from(aesKey, 'utf8'), Buffer.from(ivHex, 'hex'));
    text = Buffer.concat([decipher.update(Buffer.from(ctHex, 'hex')), decipher.final()]).toString('utf8');
  } catch (e) {
    return refused('decipher: ' + e.message);
  }
  let payload;
  try {
    payload = JSON.parse(text);
  } catch (e) {
    return refused('JSON.parse: ' + e.message);
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return refused('not an object');
  const expected = Buffer.from(signature(payload, encodedKeyTimestamp).hash, 'utf8');
  const given = Buffer.from(authorization.slice('Basic '.length), 'utf8');
  const facts = {
    ownKey: Object.prototype.hasOwnProperty.call(payload, 'key'),
    ownProto: Object.prototype.hasOwnProperty.call(payload, '__proto__'),
  };
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
    return { ...refused('signature mismatch'), ...facts };
  }
  return { ok: true, reason: 'valid', stringified: JSON.stringify(payload), ...facts };
}

const OPS = { seal, verify, sealText, receive };

module.exports = { derive, sealObject, signature }; // (benchmarks/node_seal.js, benchmarks/node_verify.js)

if (require.main === module) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  rl.on('line', (line) => {
    let out;
    try {
      const r = JSON.parse(line);
      out = OPS[r.op](r);
    } catch (e) {
      out = { error: String(e && e.message) };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}
