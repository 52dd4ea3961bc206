-- wrk script for the miss scenario: every request is a distinct report (advertiser and
-- a 36-day window that moves one day every 4 requests), so each one is a cache miss.
-- Argument (after --): the first request number, so that runs never repeat a report.
local counter = 0
local first = 0
local DAY = 86400
local EPOCH = 631152000 -- 1990-01-01T00:00:00Z

function init(args)
  first = tonumber(args[1]) or 0
end

function request()
  local i = first + counter
  counter = counter + 1
  local day = math.floor(i / 4)
  local from = os.date('!%Y-%m-%d', EPOCH + day * DAY)
  local to = os.date('!%Y-%m-%d', EPOCH + (day + 35) * DAY)
  return wrk.format(nil, '/api/v1/report/campaigns/get?advertiserId=' .. (100 + i % 4) ..
    '&dateFrom=' .. from .. '&dateTo=' .. to .. '&byDate=1')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
