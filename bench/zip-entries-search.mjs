// The price of searching a zip's entries (an xlsx export: deflated XML parts) for the
// platform token beside the bytes as sent, against the scan the gateway makes of every
// body today (withoutToken: the bytes as sent, as they stream). A zip of `--parts=N`
// deflated XML parts of about `--mib=M` MiB of sheet XML in all is built in memory; each
// round measures (a) the scan of the zip's bytes as sent, (b) the same plus each entry
// inflated (a raw deflate stream, as a zip stores it) and searched with the token's needles.
// Medians of `--rounds=N` rounds after 2 to warm up. Run after `npm run build`, beside no
// other benchmark:
//   flock /tmp/bench.lock node bench/zip-entries-search.mjs

import { Readable } from 'node:stream'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { withoutToken } from '../dist/platform/client/token-echo.js'
import { secretForms } from '../dist/observe/secret-forms.js'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const rounds = Number(option('rounds', '9'))
const parts = Number(option('parts', '4'))
const mib = Number(option('mib', '8'))
const token = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiI0NTYiLCJleHAiOjE4MDAwMDAwMDB9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg'
const needles = secretForms(token).map((form) => Buffer.from(form))

function sheet(bytes, part) {
  let xml = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet><sheetData>'
  for (let row = 1; xml.length < bytes; row++) xml += `<row r="${row}"><c r="A${row}" t="s"><v>${row % 977}</v></c><c r="B${row}"><v>${(row * 7919 + part) % 100000}</v></c><c r="C${row}"><v>${((row * 31) % 1000) / 10}</v></c></row>`
  return Buffer.from(`${xml}</sheetData></worksheet>`)
}

/** A zip of deflated entries, local headers only (what a reader walks to each entry's data). */
function zipOf(entries) {
  const out = []
  for (const [name, data] of entries) {
    const packed = deflateRawSync(data)
    const head = Buffer.alloc(30)
    head.writeUInt32LE(0x04034b50, 0)
    head.writeUInt16LE(20, 4)
    head.writeUInt16LE(8, 8)
    head.writeUInt32LE(packed.length, 18)
    head.writeUInt32LE(data.length, 22)
    head.writeUInt16LE(Buffer.byteLength(name), 26)
    out.push(head, Buffer.from(name), packed)
  }
  return Buffer.concat(out)
}

/** Each entry's bytes, inflated where deflated, by walking the local headers. */
function* entriesOf(zip) {
  for (let at = 0; at + 30 <= zip.length && zip.readUInt32LE(at) === 0x04034b50; ) {
    const method = zip.readUInt16LE(at + 8)
    const size = zip.readUInt32LE(at + 18)
    const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28)
    const data = zip.subarray(start, start + size)
    yield method === 8 ? inflateRawSync(data) : data
    at = start + size
  }
}

const zip = zipOf(Array.from({ length: parts }, (_, i) => [`xl/worksheets/sheet${i + 1}.xml`, sheet((mib * 1024 * 1024) / parts, i)]))

async function scanAsSent() {
  const scan = withoutToken({ 'content-type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' }, Readable.from([zip]), token)
  for await (const chunk of scan) void chunk
}

function searchEntries() {
  for (const entry of entriesOf(zip)) if (needles.some((needle) => entry.includes(needle))) throw new Error('found')
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const asSent = []
const withEntries = []
for (let round = 0; round < rounds; round++) {
  let started = process.hrtime.bigint()
  await scanAsSent()
  const a = Number(process.hrtime.bigint() - started) / 1e6
  started = process.hrtime.bigint()
  await scanAsSent()
  searchEntries()
  const b = Number(process.hrtime.bigint() - started) / 1e6
  if (round >= 2) {
    asSent.push(a)
    withEntries.push(b)
  }
}
console.log(`zip of ${parts} deflated parts, ${(zip.length / 1024 / 1024).toFixed(2)} MiB sent, ${mib} MiB of XML`)
console.log(`scan as sent: ${median(asSent).toFixed(2)} ms; with its entries inflated and searched: ${median(withEntries).toFixed(2)} ms (${(median(withEntries) / median(asSent)).toFixed(2)}x)`)
