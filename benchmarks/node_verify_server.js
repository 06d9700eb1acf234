// A Node.js http server verifying terminal requests (issue 42, goal 4; benchmarks/http_serving.py drives it): each
// POST's body read, benchmarks/node_verify.js's verify run on its headers and body (the natural way: JSON.parse,
// split, decipher, JSON.parse, key, JSON.stringify, Base64, SHA-512, timingSafeEqual), 200 with the payload as
// JSON, or 401 with the AUTH-001 body. One process, one thread: as one uvicorn worker.
// Usage: node node_verify_server.js PORT BUSINESS_CODE TERMINAL_SERIAL
'use strict';
const http = require('http');
const path = require('path');
const { verify } = require(path.join(__dirname, 'node_verify.js'));

const [port, businessCode, terminalSerial] = process.argv.slice(2);
const AUTH_001 = '{"type":"AUTH","code":"AUTH-001","message":"Invalid or expired credentials"}';

function answer(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let payload;
    try {
      const r = { businessCode, terminalSerial, now: Math.floor(Date.now() / 1000) };
      payload = verify(req.headers, Buffer.concat(chunks).toString('utf8'), r);
    } catch (e) {
      answer(res, 401, AUTH_001);
      return;
    }
    answer(res, 200, JSON.stringify(payload));
  });
}).listen(Number(port), '127.0.0.1');
