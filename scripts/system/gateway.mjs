// Stand-in for the PicoClaw gateway in the system test: listens on 18790 (all addresses,
// so the IP filter check has a non-loopback address to try), then writes the PID file
// (<home>/.picoclaw.pid: pid, token, version, port, host) as pkg/pid/pidfile.go does,
// and removes it when stopped.
import { createServer } from 'node:http';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const home = process.env.PICOCLAW_HOME;
if (!home) throw new Error('PICOCLAW_HOME is not set');
const pidFile = join(home, '.picoclaw.pid');
const port = 18790;

const server = createServer((req, res) => {
  if (req.url === '/ready') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ready"}');
  } else if (req.url === '/health') {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: 'ok', pid: process.pid, uptime: process.uptime() }));
  } else {
    res.writeHead(404).end();
  }
});
server.listen(port, '0.0.0.0', () => {
  const tmp = `${pidFile}.tmp`;
  writeFileSync(
    tmp,
    JSON.stringify({
      pid: process.pid,
      token: 'standin-reload-token-not-secret',
      version: 'standin',
      port,
      host: '127.0.0.1',
    }),
    { mode: 0o600 },
  );
  renameSync(tmp, pidFile);
  console.log(`gateway stand-in ready on :${port}, PID file ${pidFile}`);
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    rmSync(pidFile, { force: true });
    server.close(() => process.exit(0));
  });
}
