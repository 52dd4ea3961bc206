// The platform's report reads (platform-api.md): `/api/v1/report/{split}/get`, which read
// `advertiserId` (GET) or `campaignIds` (POST). A report path of another shape is a route
// whose account field is not known.
export const REPORT_READ = /^\/api\/v1\/report\/[^/]+\/get\/?$/
/** Where the POST form of a report read names its campaigns, by which it is placed. */
export const REPORT_CAMPAIGNS = 'campaignIds'
