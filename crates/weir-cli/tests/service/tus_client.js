// tus-js-client (npm) on Node against `weir serve`, run by tus.rs; the same modes as
// tus_client.py:
//   node tus_client.js ENDPOINT FILE NAME DIR MODE URL_FILE
//   whole: upload FILE in 1 MiB chunks; start: 2 chunks, then abort and write the upload's URL
//   to URL_FILE; resume: a new upload from the URL in URL_FILE finishes it.
'use strict';
const fs = require('fs');
const tus = require('tus-js-client');

const [endpoint, path, name, dir, mode, urlFile] = process.argv.slice(2);
const data = fs.readFileSync(path);
const chunk = 1 << 20;
const metadata = { filename: name };
if (dir) metadata.dir = dir;

function fail(err) {
  console.error(`tus-js-client ${mode}: ${err}`);
  process.exit(1);
}

const options = {
  endpoint,
  chunkSize: chunk,
  metadata,
  retryDelays: null,
  onError: fail,
  onSuccess: () => console.log(upload.url),
};
if (mode === 'start') {
  let chunks = 0;
  options.onChunkComplete = () => {
    chunks += 1;
    if (chunks === 2) {
      fs.writeFileSync(urlFile, upload.url);
      upload.abort().then(() => console.log(upload.url));
    }
  };
  options.onSuccess = () => fail('completed although aborted');
} else if (mode === 'resume') {
  options.uploadUrl = fs.readFileSync(urlFile, 'utf8').trim();
  options.onProgress = (sent) => {
    if (sent < 2 * chunk) fail(`resumed from ${sent}, not from 2 MiB`);
  };
} else if (mode !== 'whole') {
  fail(`unknown mode ${mode}`);
}
const upload = new tus.Upload(data, options);
upload.start();
