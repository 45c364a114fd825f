// http_echo.js - a node HTTP server for tests/runtimes: GET /N answers
// "ok N\n".  It listens on 127.0.0.1 at an ephemeral port and writes that
// port, once bound, to the file named by its first argument.
'use strict';
const fs = require('fs');
const http = require('http');

const server = http.createServer((req, res) => {
	// Some string and object work per request, so that V8 optimizes and
	// collects while needle attaches.
	const parts = [];
	for (let i = 0; i < 50; i++)
		parts.push({ i, s: (req.url.length * i).toString(16) });
	const body = 'ok ' + req.url.slice(1) + '\n' + (parts.length > 99 ? 'x' : '');
	res.writeHead(200, { 'Content-Length': Buffer.byteLength(body) });
	res.end(body);
});
server.listen(0, '127.0.0.1', () => {
	const file = process.argv[2];
	fs.writeFileSync(file + '.tmp', String(server.address().port));
	fs.renameSync(file + '.tmp', file);
});
