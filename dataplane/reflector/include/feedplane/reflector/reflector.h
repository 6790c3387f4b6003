// The reflector: accounts, subscriptions, their last-k lists and the feeds they serve, as
// a per-shard component of `feedplane serve` (component.h).
//
// Placement (token.h): an account or subscription lives on the shard of its partition;
// owner() places its store records there at start-up, so --shards may change.
//
// Routes (JSON bodies parsed with simdjson; errors {"error": CODE, "message": ...}):
//   POST   /api/accounts                 201 {"id", "secret"} (the secret is shown once)
//   POST   /api/account:rotate           Bearer SECRET; 200 {"id", "secret"} (old one stops)
//   DELETE /api/account                  Bearer SECRET; 204, with every subscription
//   POST   /api/subscriptions            Bearer SECRET; {"query", "k"?, "title"?} -> 201
//                                        (Idempotency-Key: a retry gets the first's result)
//   GET    /api/subscriptions            Bearer SECRET; {"subscriptions": [...]}
//   GET    /api/subscriptions/{id}       Bearer SECRET
//   PATCH  /api/subscriptions/{id}       Bearer SECRET; {"query"?, "k"?, "title"?}
//   DELETE /api/subscriptions/{id}       Bearer SECRET; 204
//   POST   /api/subscriptions/{id}:rotate  Bearer SECRET; a new feed token (old one 404)
//   POST   /api/subscriptions:bulk       admin token; JSON Lines in and out
//   POST   /api/preview                  Bearer SECRET; {"query", "k"?} -> recent matches
//   POST   /api/match-time               admin token; {"title"?, "text"?, "repeat"?} or
//                                        {"articles": [{"title", "text"}...], "repeat"?} ->
//                                        each shard's subscriptions and median, mean and
//                                        fastest match time
//   GET    /api/match-stats              admin token; ?min_words=&max_words= -> exact p50,
//                                        p90, p99, p99.9 of the shards' last 65,536 live
//                                        articles' match times (index alone in wall and
//                                        thread CPU time, with appends); &samples=1
//                                        adds each sample (when, words, times, work,
//                                        what else the shard and the store were doing)
//   GET    /api/memory                   admin token; this shard's memory state (normal,
//                                        tight or paused under reflector.memory_limit_mb),
//                                        the process's resident bytes and the caches' bytes
//   GET    /f/{token}  /f/{token}.atom  /f/{token}.json   RSS 2.0, Atom 1.0, JSON Feed 1.1
//                                        rendered once per change, kept between polls
//                                        within reflector.render_cache_mb (render_cache.h)
//
// Every change is acknowledged once durable (the store's ack) and installed on the owner.
// Lists are derived state: at start-up `feedplane serve` replays the article log and the
// shards re-match it (store_options::replay_from); each subscription records the first
// sequence it matches (its backfill's start, else the sequence its shard had applied when
// it was made), so a replay gives it the same list. Each shard also snapshots its
// partitions' lists (snapshot.h, every reflector.snapshot_interval_s and on a clean stop):
// a start restores them and re-matches, below the snapshots' sequences, only the
// subscriptions they do not cover.
//
// Weight feedback (issue 10): each shard counts, per source, how many of its subscriptions
// the source's new articles matched (not the replayed log's), and every
// reflector.weight_report_interval_s sends the counts to the shard that crawls the source
// (component::on_source_matches), which makes them the source's fetch weight.
#pragma once

#include "feedplane/dataplane/component.h"

namespace feedplane::reflector {

// The component's definition for `feedplane serve` (kinds accounts and subscriptions).
const dataplane::component_def& component();

}  // namespace feedplane::reflector
