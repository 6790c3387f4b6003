// The crawler component of `feedplane serve` (component.h): on every shard, the sources
// whose politeness key the shard owns (placement.h), their per-feed state and schedule,
// fetches through the shard's HTTP client, and the hand-off of new articles to the store
// together with the feed's state in one durable write (DESIGN.md 9 "Durability").
//
// Admin API (Authorization: Bearer ADMIN_TOKEN; errors are {"error", "message"}):
//   POST   /api/sources          {"url": U, "title"?: T} -> 201 {"id", "url"} once durable
//                                and installed on its owner shard (200 when it existed)
//   GET    /api/sources          ?after=ID&limit=N (1..1000, default 100), in id order ->
//                                {"sources": [{"id", "url", "title", ...}], "next": ID|null}
//   GET    /api/sources/{id}     the source's status (crawler.cc: status_on_owner), with its
//                                weight: 1 + the subscriptions a recent article matched
//                                (scheduler.h: match_weight; the reflectors report them)
//   DELETE /api/sources/{id}     -> 200 {"deleted": ID} once durable
//   POST   /api/sources:import   OPML body -> {"added", "duplicates", "invalid": [...]}
//   GET    /api/sources:export   OPML 2.0 of every source
// A full ring answers 503 with Retry-After; a retried import adds nothing twice.
#pragma once

#include "feedplane/dataplane/component.h"

namespace feedplane::crawler {

// The crawler's component_def: kinds `sources` and `crawl`, placed by politeness key.
extern const dataplane::component_def def;

}  // namespace feedplane::crawler
