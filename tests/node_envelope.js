// An independent implementation of the terminal envelope (spec 5.1), as the JavaScript server
// computes it: Node's crypto and JSON.stringify, nothing from pasarela. One JSON request per line:
//   {"op": "seal", "businessCode", "terminalSerial", "timestamp", "ivHex", "plaintext"}
//     -> {"authorization", "data", "signed"}: seal requestData = JSON.parse(plaintext)
//   {"op": "verify", "businessCode", "terminalSerial", "timestamp", "authorization", "data"}
//     -> {"ok", "payload"}: what the server does with a sealed request
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

module.exports = { sealObject };

if (require.main === module) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  rl.on('line', (line) => {
    let out;
    try {
      const r = JSON.parse(line);
      out = r.op === 'seal' ? seal(r) : verify(r);
    } catch (e) {
      out = { error: String(e && e.message) };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}
