// Keeps eight fs.read() calls of 1 MiB into fresh Buffers in flight on libuv's thread pool
// while child_process.execFile('/bin/true') runs in a loop, for SECONDS. Prints one summary
// line; exits 1 if any read failed (EFAULT: the kernel could not write into a heap buffer) or
// a child failed, 0 otherwise. usage: node node_reads_while_spawning.js FILE SECONDS
'use strict';
const fs = require('fs');
const { execFile } = require('child_process');
const [file, secs] = [process.argv[2], Number(process.argv[3] || 4)];
const size = fs.statSync(file).size, chunk = 1 << 20;
const fd = fs.openSync(file, 'r');
const end = Date.now() + secs * 1000;
let reads = 0, readErrors = 0, spawns = 0, spawnErrors = 0, firstError = '';
let inFlight = 0, spawning = false;
function note(e) { if (!firstError) firstError = String(e && e.message || e); }
function readOne() {
  if (Date.now() >= end) return finish();
  inFlight++;
  const buf = Buffer.allocUnsafeSlow(chunk); // its own malloc'd memory, not the shared pool
  const pos = Math.floor(Math.random() * Math.max(1, (size - chunk) / 4096)) * 4096;
  fs.read(fd, buf, 0, chunk, pos, (err, n) => {
    inFlight--;
    if (err) { readErrors++; note(err); } else reads++;
    readOne();
  });
}
function spawnOne() {
  if (Date.now() >= end) { spawning = false; return finish(); }
  spawning = true;
  execFile('/bin/true', (err) => {
    if (err) { spawnErrors++; note(err); } else spawns++;
    spawnOne();
  });
}
let done = false;
function finish() {
  if (done || inFlight > 0 || spawning) return;
  done = true;
  console.log(`node_reads: ${reads} reads (${readErrors} failed), ${spawns} spawns (${spawnErrors} failed)` +
              (firstError ? `; first error: ${firstError}` : ''));
  process.exit(readErrors || spawnErrors || reads === 0 || spawns === 0 ? 1 : 0);
}
for (let i = 0; i < 8; i++) readOne();
spawnOne();
