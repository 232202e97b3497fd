"""The admission server: an aiohttp TLS server that translates AdmissionReviews to the rules of `failover/` and back.

- Serving: `server` (the aiohttp application and its endpoints), `listener` (the TLS listener and its caps),
  `fairness` (who gives way in a full listener), `drain` (closing connections on the way out), `log_limit` (bad
  requests logged once per source), `health` (readiness that means something), `metrics`, `encoding` (JSON out).
- The wire: `review` (the AdmissionReview format), `handlers` (routing by kind and operation).
- The mutations: `mutators` (savepoint injection), `work_mutator` (preserved state on Works), `fence_mutator` (a
  member's fenced copies kept suspended), `blocking` (blocking calls off the event loop, under a deadline).

Imports `failover` and `certs`.
"""
