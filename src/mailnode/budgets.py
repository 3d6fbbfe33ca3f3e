"""Every limit, window and threshold mailnode uses, each with where its number comes from.

Units are in the name (``_SECONDS``, ``_BYTES``, ``_STATEMENTS``). "seed 000" etc. name the seed
documents in ``../shared/seeds/``; "reference" means the public TypeScript reference node described
in ``../shared/spec/`` (Part B); "measured" means a figure measured in this repository, with the test
that measures it. Code never writes a bare number that belongs here.
"""

from __future__ import annotations

# --- API -----------------------------------------------------------------------------------------

#: Lists are clamped to 1..LIST_LIMIT_MAX (never an error). Sized: a page a person can read at once.
LIST_LIMIT_MAX = 500
#: Longest list cursor that names a row by its name rather than its id (Butlers, policies), in characters.
#: Sized: a name is at most BUTLER_NAME_MAX_CHARS (200); a longer cursor names nothing and is refused.
NAME_CURSOR_MAX_CHARS = 200
#: The page size when ``limit`` is absent. Sized.
LIST_LIMIT_DEFAULT = 50
#: Longest search query (``GET /api/search?q=``), characters. Sized: a person's query is a few words and
#: filters; SEARCH_QUERY_MAX_TERMS terms of a long address each fit with room.
SEARCH_QUERY_MAX_CHARS = 1000
#: Most terms (words, quoted phrases and ``field:value`` filters) one search query may hold. Sized: each
#: full-text term is one more FTS5 phrase or tsquery operand, and a person's query rarely has ten.
SEARCH_QUERY_MAX_TERMS = 20
#: Body text indexed per message or send, characters (the rest is not searchable). Sized: PostgreSQL refuses
#: a tsvector over 1 MiB ("string is too long for tsvector"), which would fail the materialisation; 64 Ki
#: characters are at most 256 KiB of UTF-8, and the worst case measured (32,768 distinct one-letter words of
#: four UTF-8 bytes, tests/search/test_search_index.py) makes a 393,224-byte tsvector. A person's mail is
#: shorter.
SEARCH_BODY_MAX_CHARS = 64 * 1024
#: Subject and sender text indexed, characters each (RFC 5322 §2.1.1: a line is at most 998 characters;
#: a folded Subject may be longer, and what passes this is not searchable).
SEARCH_SUBJECT_MAX_CHARS = 2000
#: Recipient text indexed (delivered-to, To, Cc, or a send's recipients), characters. Sized:
#: SEND_RECIPIENTS_MAX addresses of 80 characters.
SEARCH_ADDRESSES_MAX_CHARS = 16 * 1024
#: Length of a search result's snippet, characters. Sized: two lines of a result list.
SEARCH_SNIPPET_CHARS = 160
#: An API token is ``mn_`` + this many random bytes, URL-safe base64. 32 bytes = 256 bits (sized).
TOKEN_RANDOM_BYTES = 32
#: Longest API token label, in characters (sized): a label is one line shown in token lists and the audit
#: trail; room for ``app `` + an application name of APP_NAME_MAX_CHARS (200), the label its tokens get.
TOKEN_LABEL_MAX_CHARS = 256

# --- Storage -------------------------------------------------------------------------------------

#: SQLite waits this long for a lock before SQLITE_BUSY. Sized for a few concurrent writers.
SQLITE_BUSY_TIMEOUT_MS = 15_000

#: DBOS polls SQLite for notifications (a release waking a waiting run) this often, seconds. spec/dbos.md
#: trap 4: 0.05 s gave 38 ms send-to-wake, against 1 s by default.
DBOS_NOTIFICATION_POLL_SECONDS = 0.05
#: DBOS's queue workers look for queued workflows this often, seconds (DBOS's default is 1 s). Sized like the
#: notification poll: a delivery waits at most this long in an idle queue before its materialisation starts,
#: and each poll is one short read and one claim on the system database.
DBOS_QUEUE_POLL_SECONDS = 0.05

# --- Audit ---------------------------------------------------------------------------------------

#: Audit detail JSON over this many UTF-8 bytes is replaced by a truncation record (reference: 2048).
AUDIT_MAX_DETAIL_BYTES = 2048
#: Rows per page when verifying the chain (reference: audit.verify_batch = 1000).
AUDIT_VERIFY_BATCH = 1000
#: ``GET /api/audit`` answers at most this many rows per page (reference: newest 200).
AUDIT_LIST_MAX = 200
#: The largest audit sequence number a cursor may name: SQLite's INTEGER and PostgreSQL's BIGINT are signed
#: 64-bit (SQLite datatype3 §2, PostgreSQL numeric types), so a larger one cannot be compared in SQL.
AUDIT_CURSOR_MAX = 2**63 - 1

# --- Ingress -------------------------------------------------------------------------------------

#: Largest message accepted over SMTP or ingest, bytes. 25 MiB: the common provider ceiling (Gmail,
#: Microsoft 365 receive limits are 25-35 MB); anything larger is refused 552 and nothing is stored.
MESSAGE_MAX_BYTES = 25 * 1024 * 1024
#: SMTP line length honoured on input, bytes. RFC 5321 §4.5.3.1.6 says 1,000 octets; real bounces
#: carry longer lines, so the listener accepts up to the message size (be liberal in what you accept).
SMTP_LINE_MAX_BYTES = MESSAGE_MAX_BYTES
#: Authentication-Results values longer than this are not handed to authres (sized: the longest
#: real header in the corpus is under 4 KiB; a cap bounds parser time on hostile input).
AUTH_RESULTS_MAX_BYTES = 8 * 1024
#: Seconds between scans for receipts still unmaterialised (sized: the repair of a crash between
#: the receipt commit and the workflow start may take this long).
MATERIALISE_SCAN_INTERVAL_SECONDS = 30
#: Receipts the repair scan starts per pass (sized: bounded work per schedule tick).
MATERIALISE_SCAN_BATCH = 500
#: Materialisation workflows one process runs at once (the ``materialise`` DBOS queue's worker concurrency);
#: the rest wait, durably, in the queue. Sized (issue 19): with no limit DBOS's executor ran about 20 at once,
#: which took the SQLAlchemy pool's 15 connections (5 plus 10 overflow) and left the listener waiting for one,
#: so the ``250`` was paced by materialisation; parsing is Python work, and on two cores more than a few at
#: once only queue for the interpreter lock. 4 leaves 11 connections to the listener and the API.
MATERIALISE_WORKER_CONCURRENCY = 4
#: How long the listener's route cache (``ingress.route_cache``) trusts a route it looked up, seconds. A change
#: made in this process invalidates the cache at once (a generation bumped on commit); this bounds how long a
#: change made by another process (the CLI, a second ``serve``) can go unseen. Only existing routes are cached,
#: so the delay can accept mail for a just-removed address (its receipt fails 451 if the mailbox row is gone),
#: never refuse mail for a just-created one. Sized: a change takes effect about as fast as an operator can
#: switch to a mail client and send, and at the issue-19 burst rate (hundreds of RCPTs a second) one lookup
#: every 2 s per address costs nothing.
ROUTE_CACHE_TTL_SECONDS = 2.0
#: Addresses the route cache holds, oldest dropped first. Sized: a node's mailbox and VERP addresses in use
#: at once; each entry is a few hundred bytes, so 10,000 is a few MB at most.
ROUTE_CACHE_MAX_ENTRIES = 10_000
#: Deliveries the listener's writer commits in one transaction (group commit, ``ingress.committer``). The
#: group is whatever arrived while the previous commit ran, so with N concurrent clients it stays near N; the
#: cap bounds one transaction's size (and the 451s a failed group answers) when many connections burst at
#: once. Sized: 64 deliveries at the 25 MB maximum would be large, but a group is formed only from messages
#: already received in memory, and aiosmtpd's connections are bounded by the clients.
GROUP_COMMIT_MAX_DELIVERIES = 64
#: Threads that write and fsync a group's evidence blobs at once (``EvidenceStore.put_many``). Sized: fsync is
#: I/O, not interpreter work, and concurrent fsyncs share the file system's journal commit (ext4 on the
#: development container: 2.7 ms a file one after another, 0.7 ms a file four at a time); 4 matches the
#: issue-19 clients, hence the usual group size.
EVIDENCE_FSYNC_THREADS = 4
#: Accept first, materialise after (issue 19): the listener holds the receipt ids of committed deliveries and
#: enqueues their materialisation once no delivery was committed for this long, seconds. Sized: longer than
#: the gap between deliveries of a burst (a few ms at the issue-19 rate; 4 clients each wait only for their
#: own 250) and short against the queue's own poll (``DBOS_QUEUE_POLL_SECONDS``, 0.05) plus a materialisation
#: (tens of ms), so a lone delivery is materialised about as soon as before.
MATERIALISE_DEFER_QUIET_SECONDS = 0.2
#: ...but never later than this after the oldest held receipt was committed, seconds: a steady stream with
#: no quiet gap is still materialised. Sized: the issue-19 burst (466 messages) takes under 2 s at the target
#: rate, and doctor's ``materialisation_backlog`` counts a receipt from its commit either way.
MATERIALISE_DEFER_MAX_SECONDS = 5.0
#: Doctor's ``materialisation_backlog`` is degraded once the oldest receipt waiting to be materialised is this
#: old, seconds. Sized: a receipt whose workflow start was lost waits up to one repair scan
#: (``MATERIALISE_SCAN_INTERVAL_SECONDS``, 30) before it is queued; a burst of the corpus's size drained in
#: under 30 s when measured (docs/performance.md, "Ingest (issue 19, first slice)"). Four scan intervals
#: without the oldest being materialised means the backlog is not draining.
MATERIALISE_BACKLOG_AGE_MAX_SECONDS = 4 * MATERIALISE_SCAN_INTERVAL_SECONDS
#: Materialisation attempts a receipt may start without finishing; the next attempt quarantines it instead of
#: parsing it again (issue 14 item 1: a message that got the process killed was parsed again at every start, a
#: crash loop). Sized: one death can be bad luck (another process took the memory), three in a row on the
#: same receipt are the message's doing, and each costs a restart.
MATERIALISE_ATTEMPTS_MAX = 3
#: Defects recorded per parsed message; past this one line says how many more (sized: the worst
#: corpus file has under 10; a hostile message could carry thousands of broken headers).
PARSE_DEFECTS_MAX = 50
#: Parsing one message is bounded by the budgets below so that any message up to MESSAGE_MAX_BYTES costs at
#: most about 256 MB of memory growth and a few seconds of CPU (issue 14 item 1: one 2.1 MB message grew the
#: process past 12 GB). The standard library's structured header parser (``policy.default.header_factory``)
#: is quadratic in encoded words and address-list entries, and its message parser keeps a Python object per
#: line and recurses per nested part; each figure below is measured by ``bench/header_parse.py`` and
#: ``tests/ingress/db/test_hostile_messages.py`` (docs/performance.md, "Header parsing"). A header past a budget
#: keeps its value as received and records a defect naming the measure; a body past one is not read into
#: parts (the raw bytes keep it) and the headers are still read, so the message is threaded and shown.
#: Top-level header fields read; the rest are left in the raw bytes. Sized: the corpus's most is under 100
#: (long Received chains); the stdlib parser costs about 280 bytes a field line.
PARSE_HEADERS_MAX = 1000
#: Longest header value decoded and handed to the structured parser, characters. Measured: a 64 KiB
#: unstructured value costs 0.02 s and 6 MiB, 1 MiB costs 2.7 s and 92 MiB; a long real References is 10-20 KiB.
PARSE_HEADER_STRUCTURED_MAX_CHARS = 64 * 1024
#: RFC 2047 encoded words ("=?") in one header value past which it is kept as received. Measured: 500 words
#: cost 0.005 s and 3 MiB, 4,000 cost 152 MiB, 100,000 (the issue's Subject) grew past 12 GB.
PARSE_HEADER_ENCODED_WORDS_MAX = 500
#: Addresses ("@" signs) in one address-list header past which it is kept as received and no address is read
#: from it. Measured: 1,000 plain entries cost 0.06 s and 9 MiB; 4,000 with encoded names cost 0.9 s and
#: 306 MiB; the issue's 20,000 took the process to 22 GB. A real To or Cc holds tens.
PARSE_ADDRESS_LIST_ENTRIES_MAX = 1000
#: Header characters one message may have decoded and structurally parsed in all, past which further headers
#: are kept as received (sized: about 1 s of the worst shape within the per-header budgets; a real message's
#: headers, DKIM and ARC included, are under 50 KiB).
PARSE_HEADERS_TOTAL_CHARS = 256 * 1024
#: Bytes handed to the stdlib message parser at a time. Measured: 25 MB of short lines grew the process by
#: 174 MB handed over whole (one decoded copy, then every line split at once) and by 52 MB in 64 KiB chunks.
PARSE_FEED_CHUNK_BYTES = 64 * 1024
#: Lines in a message past which its body is not read into parts. Measured: the stdlib parser keeps about 85
#: bytes a line (12 M blank lines: 1 GB) and 280 bytes a header line inside a part; 400,000 lines is at most
#: about 110 MiB, and a 25 MiB base64 attachment is 340,000 lines.
PARSE_LINES_MAX = 400_000
#: MIME parts (``Content-Type`` lines, and delimiter lines of declared boundaries) past which the body is not
#: read into parts. Bounds the nesting depth the stdlib parser and ``walk()`` recurse through (a 5,000-deep
#: multipart raised RecursionError at about 980 levels) and the width the report readers walk (200,000 parts
#: took 10 s). Sized: the corpus's most is under 20; a message with 150 attachments still fits.
PARSE_MIME_PARTS_MAX = 200
#: Message-IDs kept from References (the first, the root, and the newest others) and from In-Reply-To. Threading
#: looks each up in turn (one statement each); sized as five times SEND_REFERENCES_EMITTED_MAX.
PARSE_REFERENCES_MAX = 100
#: Longest message id read, characters: RFC 5322 §2.1.1's 998-character line. A longer one is not read (a
#: defect says so): message ids are kept in a B-tree index, and PostgreSQL refuses an index row over 2,712 bytes.
PARSE_MSG_ID_MAX_CHARS = 998
#: Characters of an HTML body handed to the sanitiser (nh3) and to the HTML-to-text converter (inscriptis);
#: past it the rest is not read and a defect says so (the raw message keeps it). Gmail clips a message's HTML
#: at 102 KB; this is five times that. Measured (bench/html_body.py, docs/performance.md "HTML bodies"): 580,000
#: characters of table rows, inscriptis's costliest shape, convert in 0.75 s and 60 MiB; nh3 sanitises them in
#: 0.04 s.
HTML_BODY_MAX_CHARS = 512 * 1024
#: Elements open at once in an HTML body (counted leniently over its tags, elements the parser closes by
#: itself such as ``p``, ``li`` and ``td`` not counted) past which it is neither sanitised nor converted to
#: text. Measured (bench/html_body.py): nh3 (html5ever) is quadratic in nesting, 20,000 unclosed ``div`` cost
#: 0.5 s and 60,000 cost 4.5 s, while lxml stops at 256 levels and inscriptis then returns nothing. Real
#: newsletters nest tables 20-40 deep.
HTML_NESTING_MAX = 256
#: Bytes read to sniff an attachment's type (WHATWG MIME Sniffing §5.2 reads 1,445 bytes).
ATTACHMENT_SNIFF_BYTES = 1445
#: Longest safe-to-save file name, UTF-8 bytes: 255 is the limit of ext4, APFS and NTFS (in UTF-16 units).
ATTACHMENT_FILENAME_MAX_BYTES = 255
#: Lines past which a message is not offered to the plain-text report readers (flufl.bounce and the notice
#: reader; RFC 3464 and ARF parts are still read). Measured: flufl.bounce costs about 17 s per million lines
#: (50 patterns a line), so 20,000 lines is 0.35 s; a real plain-text bounce, quoted original included, is a
#: few hundred lines.
REPORT_TEXT_READERS_MAX_LINES = 20_000

# --- Outbound ------------------------------------------------------------------------------------

#: ``release_at`` = seal time + this when the mailbox sets no hold window (reference: 15 s).
SEND_HOLD_WINDOW_DEFAULT_SECONDS = 15
#: Largest hold window a mailbox may set, seconds (sized: a day; a longer hold is a policy, not a window).
SEND_HOLD_WINDOW_MAX_SECONDS = 86_400
#: References emitted on a reply: the root and the newest others (reference: 20).
SEND_REFERENCES_EMITTED_MAX = 20
#: Sends handed over per sweep batch (reference: dispatchDue limit = 20).
DISPATCH_BATCH_MAX = 20
#: Seconds between dispatch sweeps (sized: a send released by the hold window waits at most this).
DISPATCH_SWEEP_INTERVAL_SECONDS = 5
#: A claim's lease: after this a claimed send whose worker died is recovered (sized; spec/transactional.md §3).
DISPATCH_LEASE_SECONDS = 300
#: A throttled send comes round again after BASE * 2^(attempts - 1) seconds, at most MAX, or later when the
#: transport said so (retry-after). Sized: a smarthost's 4xx usually clears within minutes.
DISPATCH_BACKOFF_BASE_SECONDS = 30
DISPATCH_BACKOFF_MAX_SECONDS = 3600
#: Attempts at writing what the transport answered (the recipient's outcome, then the send's aggregate and
#: its audit entry) when the database fails transiently (a PostgreSQL deadlock or serialization failure,
#: SQLite's busy timeout). Sized: each is one short transaction whose only contention is other writers; 3
#: rides out a deadlock victim's retry twice, and the lapsed-claim recovery resolves the rest (issue 14 item 10).
DISPATCH_RECORD_ATTEMPTS = 3
#: Distinct recipients one send may carry (sized: correspondence, not a list server; the reference has none).
SEND_RECIPIENTS_MAX = 100
#: Longest Subject a send or draft may carry, in characters. RFC 5322 §2.1.1: a line is at most 998
#: characters; the renderer folds a longer Subject over several lines, but no reader shows one that long, and
#: Resend documents no limit of its own (spec/resend.md §1.2), so one line's worth is the bound.
SEND_SUBJECT_MAX_CHARS = 998
#: Longest idempotency key a caller may seal under (POST /api/mail, POST /api/sends), in characters. Resend's
#: own bound on its Idempotency-Key header (spec/resend.md), so a key taken here is one the provider takes.
IDEMPOTENCY_KEY_MAX_CHARS = 256
#: Largest typed body a send or draft may carry, in UTF-8 bytes: a quarter of MESSAGE_MAX_BYTES. The 7-bit
#: rendering may cost over 3 octets per body octet (quoted-printable of non-ASCII text: "=XX" plus a soft
#: break every 76 characters), and the rendered message must fit what this node and the common receivers
#: accept (MESSAGE_MAX_BYTES); a quarter leaves room for the headers. The Resend request carries the text as
#: JSON, at most 6 bytes per body byte (a control character as \u00XX), so it stays under
#: RESEND_EMAIL_MAX_BYTES too. Measured: tests/outbound/input/test_limits.py renders the worst cases.
SEND_BODY_MAX_BYTES = MESSAGE_MAX_BYTES // 4
#: Largest content one send may carry in all, bytes: the text body, the HTML part and every attachment's
#: decoded bytes together. The same quarter of MESSAGE_MAX_BYTES as the text alone, for the same reason: the
#: 7-bit rendering costs at most about 3 octets per octet (quoted-printable text; base64 costs 4/3), so the
#: rendered message stays under MESSAGE_MAX_BYTES whatever the mix; as base64 in a JSON request it costs 4/3,
#: under API_REQUEST_MAX_BYTES.
SEND_CONTENT_MAX_BYTES = SEND_BODY_MAX_BYTES
#: Attachments one send may carry (sized: correspondence with a few documents; PARSE_MIME_PARTS_MAX is 200,
#: so a reply carrying all of them stays well inside what this node itself parses).
SEND_ATTACHMENTS_MAX = 20
#: Longest attachment filename, characters (sized: common file systems allow 255 bytes per name).
SEND_ATTACHMENT_FILENAME_MAX_CHARS = 255
#: Characters of a parent's text a reply quotes, or a forward carries inline, before it is cut with a note
#: (sized: a long message is a few thousand words; 100,000 characters stays far inside SEND_BODY_MAX_BYTES).
REPLY_QUOTE_MAX_CHARS = 100_000
#: Longest internal note on a case, UTF-8 bytes (sized: a note is a few paragraphs; 64 KiB is a long one).
CASE_NOTE_MAX_BYTES = 64 * 1024
#: Resend: the most one email may weigh, bytes (spec/resend.md §1.3: "40 MB per email after base64
#: encoding"; read as decimal megabytes, the smaller reading).
RESEND_EMAIL_MAX_BYTES = 40 * 1000 * 1000
#: Largest HTTP request body the API reads, bytes (FastAPI and uvicorn bound none by default; the body is
#: read into memory before any route runs). The largest legitimate request is a send whose body is at
#: SEND_BODY_MAX_BYTES, written by a JSON encoder that escapes non-ASCII (\uXXXX: at most 3 bytes of JSON
#: per body byte, for characters outside the BMP; only control characters cost more, and a text body holds
#: few), plus 1 MiB for the recipients and the other fields. About 19.75 MiB.
API_REQUEST_MAX_BYTES = 3 * SEND_BODY_MAX_BYTES + 1024 * 1024
#: Deepest nesting of arrays and objects a JSON request body may have. Sized: the deepest body a route takes
#: (a policy's conditions and stages, a provider webhook event) nests under 10 levels; Python's JSON decoder
#: recurses once per level and fails with RecursionError near 1,000 (a 500 before this bound, issue 14).
JSON_NESTING_MAX = 64
#: Statement budget of a seal with no policies (reference: 12 subrequests; measured here by
#: tests/outbound/db/test_budgets.py, a new conversation: 11 on SQLite and PostgreSQL, of which governance's
#: facts are 2, the breaker statement and the live policies, and the search document 1 (issue 15); 8 before
#: governance was wired). Raised from the reference's 12 to 13 by that search document: a rate-gated seal
#: (tests/governance/e2e/test_budgets.py) adds ``send.rate_limited``'s 2 to the 11. Raised to 14 by the
#: suppression list's read (issue 20: 1 statement, ``outbound.suppression.reasons_for``).
SEAL_MAX_STATEMENTS = 14
#: Statement budget of a seal that asks for an approval (reference: 13-14, 15 with a team-scoped stage;
#: measured here by tests/governance/e2e/test_budgets.py, one stage without a team: 15, the no-policy
#: seal's 10 + the mailbox's deciders 1 + the approval, its stages and approval.requested 4; 16 since the
#: search document, issue 15). The bound adds the 1 a team-scoped stage's rosters read
#: (GOVERNANCE_SEAL_FACTS_MAX_STATEMENTS). Raised to 18 by the suppression list's read (issue 20: 1).
SEAL_APPROVAL_REQUIRED_MAX_STATEMENTS = 18
#: Statement budget of dispatching one send to one recipient (reference: 17 unapproved, 25 approved;
#: measured here by tests/outbound/db/test_budgets.py: 15 on SQLite and PostgreSQL, of which governance's
#: recheck is 2 and the provider breaker 3 (its read, and the status row read and written after the
#: hand-over); 10 before both were wired; an approved send 14 before the provider breaker,
#: tests/governance/e2e/test_budgets.py). Raised by 5 for the reserve under concurrency (issue 17 item 2):
#: each request is reserved on the locked status row (the locked read, which also counts the requests in
#: flight, the ticket counter and the request row: 3), and its request row deleted with the answer (1);
#: a transport's first request creates the status row (1). Measured for a transport's first request 20 on
#: SQLite and 21 on PostgreSQL (its audit chain lock), 19/20 after; an approved send's first 22 and 23.
#: Raised to 24 by the suppression list's check at hand-over (issue 20: one UPDATE in the claim's transaction).
#: Issue 19 (dispatch per batch): a send alone is a batch of one, measured on a transport's first request 21 on
#: SQLite and 22 on PostgreSQL (unchanged: the organisation's domains are read apart from the breaker statement,
#: and the bounce domain's read is that one), an approved send's 23 and 24: the bound stays. What a batch saves
#: is per send: DISPATCH_BATCH_MAX_STATEMENTS.
DISPATCH_ONE_RECIPIENT_MAX_STATEMENTS = 24
#: Statement budget of one sweep dispatching a full batch (DISPATCH_BATCH_MAX = 20 one-recipient sends of one
#: organisation, the transport's status row already made). Issue 19: measured 39 by
#: tests/outbound/db/test_budgets.py on SQLite and PostgreSQL (under 2 a send; 19 to 20 a send when each send was
#: dispatched on its own): the facts once per organisation and sending domain, one claim, a window of
#: DISPATCH_CONCURRENCY recipients reserved and marked together, one transaction for the outcomes,
#: aggregates and audit entries. The bound is the measurement: a change that adds a statement per send
#: shows here at once.
DISPATCH_BATCH_MAX_STATEMENTS = 39
#: Sends one sweep submits at the same time (their transport waits overlap; sized: a smarthost accepts
#: tens of concurrent sessions, and a batch is DISPATCH_BATCH_MAX; measured by bench/dispatch.py).
DISPATCH_CONCURRENCY = 8
#: Transports: recipients per submission. One envelope (or one provider request) per recipient, so Bcc
#: stays correct and every recipient row has its own idempotency key (spec/outbound.md Part A 4).
TRANSPORT_RECIPIENTS_PER_SUBMISSION = 1
#: SMTP client: seconds to open the TCP connection and read the 220 greeting (sized: a smarthost on the
#: same network answers in well under a second; RFC 5321 §4.5.3.2.1 allows a server 5 min, which would
#: hold a dispatch worker too long, and a connect failure is retried anyway).
SMTP_CONNECT_TIMEOUT_SECONDS = 30
#: SMTP client: seconds to wait for the reply to one command (RFC 5321 §4.5.3.2.2-4: MAIL and RCPT 5 min).
SMTP_COMMAND_TIMEOUT_SECONDS = 300
#: SMTP client: seconds to wait for the reply after the end-of-data dot (RFC 5321 §4.5.3.2.6: 10 min).
SMTP_DATA_TIMEOUT_SECONDS = 600
#: Resend: ``Idempotency-Key`` values are remembered this long, from first use (spec/resend.md §4: 24 h).
RESEND_IDEMPOTENCY_WINDOW_SECONDS = 24 * 3600
#: Resend: the longest key the API accepts, characters (spec/resend.md §4: 1..256).
RESEND_IDEMPOTENCY_KEY_MAX_CHARS = 256
#: Resend: seconds an HTTP request may take end to end before it is ``outcome_unknown`` (sized: the API
#: answers in well under a second; in 2023 it once stopped answering bad keys at all, spec/resend.md §3).
RESEND_HTTP_TIMEOUT_SECONDS = 30
#: Resend: retry-after assumed when a 429 carries none (spec/resend.md §6: windows are one second).
RESEND_RETRY_AFTER_DEFAULT_SECONDS = 1

# --- Governance (seed 000; spec/outbound.md §0) --------------------------------------------------

#: Send approvals expire after this (reference: approval.send_expiry_seconds = 345600, 4 days).
APPROVAL_SEND_EXPIRY_SECONDS = 345_600
#: Volume breaker: recipients handed over per window (seed 000; reference 3600 s / 500).
BREAKER_VOLUME_WINDOW_SECONDS = 3600
BREAKER_VOLUME_MAX_RECIPIENTS = 500
#: Bounce-rate breaker (seed 000; reference 21600 s / over 30 % / at least 20 observations).
BREAKER_BOUNCE_WINDOW_SECONDS = 21_600
BREAKER_BOUNCE_MAX_PERCENT = 30
BREAKER_BOUNCE_MIN_OBSERVATIONS = 20
#: Complaint-rate breaker (seed 000; reference 86400 s / over 5 % / at least 50 observations).
BREAKER_COMPLAINT_WINDOW_SECONDS = 86_400
BREAKER_COMPLAINT_MAX_PERCENT = 5
BREAKER_COMPLAINT_MIN_OBSERVATIONS = 50
#: Bounds an administrator's override of a breaker limit must keep (``governance.limits``; issue 17 item 4).
#: Volume: at least 1 recipient an hour (0 would stop all mail: that is a domain pause's job, with its two
#: approvers), at most 100,000 (sized: 200 times the seed's 500, above any single node's hourly hand-over
#: at DISPATCH_CONCURRENCY sessions; past it the breaker guards nothing).
BREAKER_VOLUME_MAX_RECIPIENTS_MIN = 1
BREAKER_VOLUME_MAX_RECIPIENTS_MAX = 100_000
#: Rates trip when the percent exceeds the limit, so a limit is 1..99: 0 would trip on one bounce
#: among the minimum observations, 100 could never trip (a breaker switched off by a number).
BREAKER_PERCENT_MIN = 1
BREAKER_PERCENT_MAX = 99
#: Minimum observations before a rate is armed: at least 1 (0 would arm on nothing), at most 10,000 (sized:
#: 200 times the seed's 50; a minimum above a day's traffic leaves the rate unarmed for ever).
BREAKER_MIN_OBSERVATIONS_MIN = 1
BREAKER_MIN_OBSERVATIONS_MAX = 10_000
#: A send a rate breaker still gates at hand-over leaves every sweep query until it is asked again
#: (``governance.gatefacts.recheck_after_seconds``): after the reading's ``retry_after_seconds`` (the oldest
#: counted row leaves the window, the earliest time alone can change the answer), but never later than this.
#: Sized against the windows and the dispatch interval: 1/12 of the shortest window (volume,
#: BREAKER_VOLUME_WINDOW_SECONDS = 3600), so a clearing no reading can foresee (an administrator raising a
#: limit in ``breaker_limits``, delivered events lowering a rate) lets mail go within 5 minutes; and 60
#: dispatch sweeps (DISPATCH_SWEEP_INTERVAL_SECONDS = 5), so a gated send is read once in 60 sweeps instead
#: of in every one (spec/transactional.md §3, "every document the sweep finds leaves by a door").
BREAKER_RECHECK_SECONDS = 300
#: ... and never sooner than this, seconds: 12 dispatch sweeps. Sized: a breaker far over its limit has rows
#: leaving the window seconds apart, and each would otherwise bring its gated sends back on the next sweep;
#: the cost is at most a minute's wait after a clearing the reading foresaw (under 2 % of the volume window).
BREAKER_RECHECK_MIN_SECONDS = 60
#: Doctor calls delivery blind when mail was handed over this long ago and nothing came back
#: (reference: events.delivery_silence_minutes = 15).
DELIVERY_SILENCE_SECONDS = 15 * 60
#: A policy's "organisation daily volume" counts recipients handed over in this rolling window, from the
#: recipient rows like the breakers (never a calendar-day counter: seed 000 on send_counters' grain).
POLICY_DAILY_VOLUME_WINDOW_SECONDS = 86_400
#: Stages of a domain-pause request: one stage of two other administrators (seed 000; reference PAUSE_STAGES).
DOMAIN_PAUSE_APPROVERS = 2
#: Statements ``governance.gatefacts.seal_facts`` may take: breakers + policies, plus deciders and team
#: rosters when approval is required (measured by tests/governance/test_sends.py: 2 without, 3 with).
GOVERNANCE_SEAL_FACTS_MAX_STATEMENTS = 4
#: Statements ``GET /api/mail`` (``outbound.mail_reads.list_mail``) runs for one page, whatever its size: the
#: administrator check, the page of manifests, their recipients and their purge records (the last two only for
#: a page that is not empty), and each recipient's events (the timeline, one statement since the send slice).
#: Measured with ``db.meter`` and asserted by tests/api/test_mail_list.py (issue 20).
MAIL_LIST_PAGE_MAX_STATEMENTS = 5
#: Messages one ``POST /api/mail/batch`` takes (issue 20: "up to 100 messages"; Resend's batch endpoint takes
#: the same 100, spec/resend.md). Measured by bench/mail_batch.py: 100 deferrable messages on SQLite.
MAIL_BATCH_MAX = 100
#: Tags one application mail may carry (sized: a mail is labelled by its kind and a campaign or two; Resend
#: and Postmark attach a handful). Tags are for the application's own filtering (``GET /api/mail?tag=``).
MAIL_TAGS_MAX = 10
#: Longest tag, characters (sized: a label, not a sentence; an index key stays small).
MAIL_TAG_MAX_CHARS = 64
#: Metadata entries one application mail may carry, and the longest key and value in characters: Postmark's
#: documented metadata bounds (10 fields, 20-character keys, 80-character values), so an application moving
#: from it keeps its metadata as it is.
MAIL_METADATA_MAX_KEYS = 10
MAIL_METADATA_KEY_MAX_CHARS = 20
MAIL_METADATA_VALUE_MAX_CHARS = 80
#: Custom headers one application mail may carry (sized: List-Unsubscribe, its -Post companion and a few
#: X- headers; every one is written into each hand-over).
MAIL_HEADERS_MAX = 10
#: Longest custom header value, characters: RFC 5322 §2.1.1's 998-character line, which the renderer may fold.
MAIL_HEADER_VALUE_MAX_CHARS = 998
#: Reply-To addresses one application mail may name (sized: RFC 5322 §3.6.2 allows a list; one or two in use).
MAIL_REPLY_TO_MAX = 5

# --- Butlers (seed 003; spec/butler.md) ----------------------------------------------------------

#: The statement pot per Butler run (issue 6: default 10000).
BUTLER_RUN_POT_STATEMENTS = 10_000

#: Largest Butler source accepted by the checker, UTF-8 bytes. The reference bounds the stored
#: canonical AST plus the source text together at 2,000,000 bytes (its d1.max_row_bytes); half of
#: that for the source leaves the same room for the canonical form stored beside it.
BUTLER_SOURCE_MAX_BYTES = 1_000_000
#: Largest stored Butler version: the canonical AST plus the source text, UTF-8 bytes. The reference's
#: row bound (d1.max_row_bytes, 2,000,000); the canonical form can outgrow its source (``9e15`` is
#: written out as sixteen digits), so this is checked after canonicalisation, before the row is written.
BUTLER_VERSION_MAX_BYTES = 2 * BUTLER_SOURCE_MAX_BYTES
#: How many bytes of stored programs (their canonical ``ast_json``) the in-process memory of checked
#: versions holds, least recently used first out (``check.check_stored``). Sized: 8 programs at the
#: source cap, or thousands of typical ones (the docs' examples are 0.6-1.2 KB), in a few tens of MB
#: of parsed documents; a version pushed out is simply checked again at its next run.
BUTLER_CHECKED_CACHE_MAX_BYTES = 8 * BUTLER_SOURCE_MAX_BYTES
#: Longest Butler name, in characters. Sized: a name is a label shown in lists and audit entries.
BUTLER_NAME_MAX_CHARS = 200
#: Longest reason an administrator gives for disabling a Butler, in characters. Sized: a sentence or two kept
#: in the row and the audit entry (``butler.disabled``); the same order as a resend's audited reason (300).
BUTLER_DISABLE_REASON_MAX_CHARS = 500
#: How long ``mailnode butler create|draft|publish|list`` wait for the node's answer. Sized: the slowest
#: route checks a program at BUTLER_SOURCE_MAX_BYTES twice (save, publish), well under a second each.
BUTLER_CLI_HTTP_TIMEOUT_SECONDS = 30
#: Deepest JSON nesting the checker reads (arrays and objects). Sized: the deepest shipped shape is
#: a ``validate`` schema a few levels down in a node in ``nodes``; 64 leaves generous room and keeps
#: every recursive walk (parse, schema check, canonical form) far below Python's recursion limit.
BUTLER_SOURCE_MAX_DEPTH = 64
#: Most nodes in one program. The reference has no cap (its only bound is the row size); sized so
#: the checker's per-loop reachability pricing stays instant (the largest example has 11 nodes).
BUTLER_NODES_MAX = 1000
#: Longest ``wait`` in seconds: 365 days, the reference platform's durable sleep limit
#: (spec/butler.md §1.4); a longer sleep could not be honoured by the reference either.
BUTLER_WAIT_MAX_SECONDS = 365 * 24 * 3600
#: Seconds a live Butler run may stay in its state beyond the longest its own program allows (its
#: ``wait`` nodes, or the release gate's timeout) before doctor's ``butler_runs_stuck`` names it. Sized: a
#: run's effects take milliseconds each and a restart's recovery a few seconds (tests/butler/runs/
#: test_graceful_stop.py), so ten minutes flags no live run, and names a stuck one well within the working
#: hour docs/operations.md gives an operator to act on a degraded doctor.
BUTLER_RUN_STUCK_GRACE_SECONDS = 600
#: Most live runs one ``butler_runs_stuck`` check examines, oldest state first (sized: one read of DBOS's
#: workflow table by id list; a node with more live runs than this is itself the finding, and says so).
BUTLER_RUN_STUCK_SCAN_MAX = 1000
#: Largest integer JSON carries exactly, and so the largest ``maxItems`` and the saturation point of
#: a price: 2^53 - 1 (RFC 7493 §2.2, I-JSON; RFC 8785 §3.2.2.3 refuses anything beyond it).
JSON_SAFE_INTEGER_MAX = 2**53 - 1

# Publication prices (``BUTLER_PRICE_*``) and runtime reservations (``BUTLER_RESERVE_*``) per effect
# node, in SQL statements. Starting values are the reference's figures (spec/butler.md §3:
# ``butler.step_cost_max_*`` for publication, ``butler.run_cost_max_*`` for the runtime guard); the
# runtime issue measures each node with the statement meter and raises a figure that a measurement
# exceeds. Pure nodes (guard, switch, map, foreach, join, wait, stop, transform, validate) cost 0.
BUTLER_PRICE_LOOKUP_STATEMENTS = 4
BUTLER_PRICE_CASE_ASSIGN_STATEMENTS = 8
BUTLER_PRICE_CASE_CLOSE_STATEMENTS = 3
BUTLER_PRICE_DRAFT_STATEMENTS = 10
BUTLER_PRICE_SEND_PROPOSE_STATEMENTS = 20
#: A margin of two statements for every effect that audits. It was measured as the cost of one lost race of
#: ``audit.append`` for the next sequence number (the tip read and the insert again: a draft took 16
#: statements instead of 14 on PostgreSQL when another writer audited in between); since appends take the
#: organisation's chain lock (``audit.py``, issue 14 item 10) they neither race nor retry, and the margin
#: is kept so a reservation stays above what its node measures.
BUTLER_RESERVE_AUDIT_RACE_STATEMENTS = 2
#: Runtime reservations, at least what tests/butler/runs/test_metering_worst_paths.py measures for each node
#: type on its dearest path as the engine performs it (the effect-row check, the sponsor's subjects, the
#: people's function, the effect row and the spend): lookup 5 (no audit); case.assign 13 (a claim for a
#: person, who must hold send.propose: one more read than for the Butler itself) + one audit race;
#: case.close 11 + one audit race; draft 14 (a reply by a Butler without content read takes the trigger
#: exemption, one more read), + 1 for a re-run, which first looks for its own draft to resume, + one audit
#: race; mail.send.propose 20. The send keeps the reference's 28 (its measured node was 23-25 there) for
#: the policy facts the seal will read and its audit races.
BUTLER_RESERVE_LOOKUP_STATEMENTS = 5
BUTLER_RESERVE_CASE_ASSIGN_STATEMENTS = 13 + BUTLER_RESERVE_AUDIT_RACE_STATEMENTS
BUTLER_RESERVE_CASE_CLOSE_STATEMENTS = 11 + BUTLER_RESERVE_AUDIT_RACE_STATEMENTS
BUTLER_RESERVE_DRAFT_STATEMENTS = 15 + BUTLER_RESERVE_AUDIT_RACE_STATEMENTS
BUTLER_RESERVE_SEND_PROPOSE_STATEMENTS = 28
#: The engine's own statements per run around the walk: the load step, the per-invocation read and the
#: close (reference: butler.run_cost_engine_fixed = 3; measured here by tests/butler/runs/test_metering.py: 5,
#: the load's read and spend, the invocation's two reads, the close).
BUTLER_RUN_ENGINE_FIXED_STATEMENTS = 5
#: The part of BUTLER_RUN_ENGINE_FIXED_STATEMENTS spent after the walk: the close (one UPDATE). Every
#: effect's guard keeps it back, so a run that performs its last affordable effect can still close within
#: its pot (issue 17 item 10: a pot of 17 let a draft-only run spend 19).
BUTLER_RUN_CLOSE_STATEMENTS = 1
#: Longest run id, characters: ``<btv id>-<msg id>`` is 61 (reference: workflow.instance_id_max_chars = 100).
BUTLER_RUN_ID_MAX_CHARS = 100

# Operating Butlers (issue 8; seed 003 "The pause, and the loop that places it"; spec/butler.md §9).
#: A Butler is paused before a run starts when its self-provoked runs in the window, counting the one in
#: front of it, would be more than this (reference: butler.loop_max_self_provoked_runs = 3; sized, not
#: measured: three answers to answers of its own is already a conversation no program should carry).
BUTLER_LOOP_MAX_SELF_PROVOKED_RUNS = 3
#: The window of that count, seconds (reference: butler.loop_window_seconds = 3600).
BUTLER_LOOP_WINDOW_SECONDS = 3600
#: How many Butlers up a chain of replies the loop detector remembers per run, nearest first: A answers
#: B answers A is caught at depth 2. Sized: a chain of eight different Butlers on one node answering each
#: other in a circle is beyond any configuration met so far, and the chain is a bounded JSON list per run.
BUTLER_LOOP_CHAIN_DEPTH = 8
#: Message-IDs of one delivery the detector looks up: its In-Reply-To and the newest References. Sized as
#: SEND_REFERENCES_EMITTED_MAX, the most this node itself emits; a longer References is cut to its newest.
BUTLER_LOOP_CANDIDATE_IDS_MAX = 20
#: Statements the loop detector may add to the trigger of a threaded delivery that replies to a Butler's
#: send: the provoking run's read, then the window count of one listening Butler (measured by
#: tests/butler/runs/test_loop.py: 1 + 1 per Butler the delivery provokes). Unthreaded mail adds none.
BUTLER_LOOP_DETECTION_STATEMENTS_PER_BUTLER = 1
#: Statements the pause check adds at trigger time and per run invocation: none, pinned as an equality
#: (reference: butler.pause_check_added_subrequests = 0). It rides on reads that already happen.
BUTLER_PAUSE_CHECK_ADDED_STATEMENTS = 0

# --- Transactional mail (seed 002; spec/transactional.md) ------------------------------------------

#: Provider daily sending limit assumed when the transport's setting gives none: Resend's free plan, 100
#: emails per UTC day (spec/resend.md §7; seed 002 "100/day"). Readings are bounded to [0, this].
PROVIDER_DAILY_LIMIT_DEFAULT = 100
#: Realtime mail (verification codes) stops when the day's reading reaches this, so the last sends of the
#: day go to deferrable notices (seed 002: "a ceiling of 90" of 100; spec/transactional.md §2 "Reserve").
PROVIDER_REALTIME_CEILING_DEFAULT = 90
#: Correspondence stops at this reading. Sized: spec/transactional.md §2 puts it between the realtime
#: ceiling and the daily limit; halfway keeps half the reserve for deferrable notices.
PROVIDER_CORRESPONDENCE_CEILING_DEFAULT = 95
#: A ``systemic`` provider pause (revoked key, account refusal) lasts this long before the next probe,
#: seconds (seed 002: "now + 15 min"; spec/transactional.md §2): one request per 15 minutes at most.
PROVIDER_SYSTEMIC_PAUSE_SECONDS = 15 * 60
#: Alert when the day's reading crosses this percent of the daily limit (seed 002: "above ~80", the
#: leading indicator; spec/transactional.md §2 "Alerting cannot be mail").
PROVIDER_QUOTA_ALERT_PERCENT = 80

#: Distinct recipients one realtime mail may name (``E_REALTIME_TOO_MANY_RECIPIENTS``, 422). Realtime mail
#: is a code for one person (seed 002; spec/transactional.md §1), tried once inside the caller's request,
#: and each recipient is one ``POST /emails`` plus one ``GET /emails/{id}`` (the transport reads the
#: Message-ID back). Sized: 5 recipients are 10 API requests, Resend's documented default per-second rate
#: (spec/resend.md §6; measured: a sixth recipient met 429 ``rate_limit_exceeded`` against the local
#: server, making the send terminal half-delivered), and half the seed's reserve (100 - 90).
REALTIME_RECIPIENTS_MAX = 5

#: Longest application name, in characters. Sized like BUTLER_NAME_MAX_CHARS: a name is a label shown in
#: lists, token labels and audit entries.
APP_NAME_MAX_CHARS = 200

#: Seconds between sweeper passes (seed 002: "every 10 minutes"; spec/transactional.md §3).
SWEEPER_INTERVAL_SECONDS = 600
#: Deferrable mail nobody handed over within this many seconds of being queued is made terminal,
#: ``withheld/gave_up`` (seed 002: "mail nobody delivered in three days").
SWEEPER_GIVE_UP_AGE_SECONDS = 3 * 86_400
#: Sweeper re-drives one deferrable send may spend before it is given up (seed 002: MAX_ATTEMPTS = 3).
#: Nothing is spent while the provider breaker is shut (spec/transactional.md §3 refusal 3).
SWEEPER_MAX_ATTEMPTS = 3
#: Rows one sweeper pass reads per query (sized: the seed's unordered limit is 50; every row read leaves
#: by a write, so a page never starves the next).
SWEEPER_BATCH_MAX = 50
#: An ambiguous send is re-driven only while its idempotency window stays open for at least this many
#: more seconds, so a claim taken just inside the window cannot submit just outside it. Sized: one claim
#: lease (DISPATCH_LEASE_SECONDS), the longest a claimed send may wait before its request leaves.
SWEEPER_IDEMPOTENCY_MARGIN_SECONDS = DISPATCH_LEASE_SECONDS

#: Digits in a verification code (sized: 10^6 codes against VERIFICATION_MAX_ATTEMPTS guesses per code
#: gives a 5-in-a-million chance per code; the seed does not give a length).
VERIFICATION_CODE_DIGITS = 6
#: A verification code expires this many seconds after it was sent (seed 002: "it expires in 24h").
VERIFICATION_CODE_TTL_SECONDS = 24 * 3600
#: A person may ask for a new code this many seconds after the last request, whether or not the send
#: worked (seed 002: "a 60-second cooldown"; the record survives a failed send, spec/transactional.md §4).
VERIFICATION_COOLDOWN_SECONDS = 60
#: Wrong guesses allowed per code; the last one clears it (seed 002: "one of the five attempts").
VERIFICATION_MAX_ATTEMPTS = 5
#: Verification codes one person may ask for per UTC day, sent or not (``E_VERIFICATION_DAILY_CAP``, 429,
#: until 00:00 UTC). The 60 s cooldown alone lets one person spend 1,440 provider requests a day, and ~90
#: presses exhaust the seed's realtime allowance (90 of 100). Sized: enough for a mistyped address and a
#: few retries; one person spends at most 5 of those 90, so exhausting the codes of everybody takes 18
#: people at their cap, not one. Counted from ``contact_email.code_requested`` audit entries under the
#: person's lock (codes.verification_io).
VERIFICATION_CODES_PER_PERSON_PER_DAY = 5
#: Random bytes of a node secret generated into the data directory (sized: 256 bits, the HMAC-SHA256 key
#: length RFC 2104 §3 recommends as a minimum of L bytes for SHA-256).
NODE_SECRET_BYTES = 32

#: Content retention per kind when the organisation sets none, seconds (seed 002: cleanup at 7 days).
RETENTION_INBOUND_RAW_SECONDS_DEFAULT = 7 * 86_400
RETENTION_SEALED_BODY_SECONDS_DEFAULT = 7 * 86_400
#: Past this age content is deleted whatever else holds it, except a legal hold (seed 002: "Older than
#: 14 days ... the ceiling wins over everything"; spec/transactional.md §5).
RETENTION_CEILING_SECONDS_DEFAULT = 14 * 86_400
#: ``retain_until`` is set this far ahead while a notice about the content is undelivered, and rewritten
#: only when less than half of it remains (spec/transactional.md §5 "half-window rewrite floor"). Sized:
#: one base retention period, so a told person has as long as the plain rule would have given.
RETENTION_NOTICE_GRACE_SECONDS = 7 * 86_400
#: Rows the deletion sweep deletes per pass, and how many candidates it may scan past retained ones to
#: find them (seed 002: "It now scans up to 500 with a cursor to find its 50").
RETENTION_DELETE_BATCH_MAX = 50
RETENTION_SCAN_WINDOW_MAX = 500
#: The largest value any retention setting (``inbound_raw_seconds``, ``sealed_body_seconds``,
#: ``ceiling_seconds``) may take, seconds: 50 years of 365 days. Sized: longer than any record-keeping
#: period the node is meant to serve (content that must outlive it belongs under a legal hold, which has no
#: end), and storable: the ``retention_settings`` columns are 32-bit INTEGER on PostgreSQL (at most
#: 2,147,483,647 s, about 68 years), so the 100 years an outsider suggested could not be stored without a
#: migration. It also keeps every age the sweep computes far inside ``timedelta`` (issue 9 follow-up: a
#: stored 2**63-1 made every pass raise ``OverflowError``).
RETENTION_SECONDS_MAX = 50 * 365 * 86_400

#: A breaker trip that clears and re-trips within this many seconds continues the same episode, so a
#: breaker flapping at its threshold sends administrators one notice, not one per flap. Sized: an hour,
#: the volume breaker's window (BREAKER_VOLUME_WINDOW_SECONDS).
NOTICE_BREAKER_EPISODE_QUIET_SECONDS = 3600
#: Audit entries, delivery events and unsealed notices the notice sweep reads per organisation per pass;
#: the rest wait for the next pass behind its cursor. Sized: a pass stays one short transaction per page.
NOTICE_SWEEP_PAGE_MAX = 200
#: Default seconds between notice sweeps (``Settings.notice_sweep_interval_seconds``, a DBOS schedule of the
#: values every schedule accepts; ``schedules.interval_cron``). Sized: half a
#: minute, so a person hears of an approval or a pause within about the dispatch sweep's own cadence.
NOTICE_SWEEP_INTERVAL_SECONDS = 30
#: A notice whose seal was refused (a 4xx ``MailnodeError``, e.g. an address the seal refuses) is tried
#: again this many seconds after the refusal, doubling per refusal up to NOTICE_SEAL_RETRY_MAX_SECONDS
#: (``notices.seal_retry_delay_seconds``). Sized: the base is the default sweep interval, so the first
#: retry is the next pass.
NOTICE_SEAL_RETRY_BASE_SECONDS = 30
#: The longest wait between two tries of a refused notice. Sized: a day, so a notice refused for good
#: (each try is one ``notice.seal_failed`` audit entry) adds one entry a day instead of one every pass,
#: while a person who fixes the cause (their contact address, the system sender) is heard within a day.
NOTICE_SEAL_RETRY_MAX_SECONDS = 86_400
#: Deciders (holders of ``approval.decide`` on the held mailbox, other than the one asking) who must
#: approve lifting a legal hold (reference: LIFT_STAGES = [2], spec/outbound.md §6.2).
HOLD_LIFT_APPROVERS = 2
#: Deciders (holders of ``approval.decide`` on the mailbox, other than the one asking) who must approve a
#: supervised grant to read a mailbox's mail facts (reference: SUPERVISED_STAGES = [2], spec/outbound.md §6.2).
SUPERVISED_APPROVERS = 2
#: The longest a supervised grant lives once granted, in seconds. Sized: a working week of one investigation;
#: the grant is time-limited by design (seed 003 §7), so a longer need is a new request the deciders see again.
SUPERVISED_GRANT_MAX_SECONDS = 7 * 86_400
#: Longest reason given for a supervised grant, in characters. Sized like BUTLER_DISABLE_REASON_MAX_CHARS: the
#: deciders read it in the approvals queue and it is kept in the row and the audit trail.
SUPERVISED_REASON_MAX_CHARS = 500
#: Longest ``matter_id`` of a legal hold, in characters. Sized like APP_NAME_MAX_CHARS: a matter reference
#: is a label shown in hold lists, the approvals queue and the audit trail (it was silently cut at 200 before
#: it was refused; issue 9 follow-up).
HOLD_MATTER_ID_MAX_CHARS = 200
#: Content rows the retention pass enrols into its ledger per kind and organisation per pass (sized as
#: RETENTION_SCAN_WINDOW_MAX: a pass reads a bounded page of each source and catches up over passes).
RETENTION_ENROL_BATCH_MAX = 500

# --- Demo (``mailnode demo``) ---------------------------------------------------------------------

#: Seconds ``mailnode serve`` may take to answer ``/api/health`` after it is started (sized: a cold start
#: with migrations and DBOS launch takes 3-6 s here; tests/butler/runs/test_served.py allows the same 60).
DEMO_NODE_START_TIMEOUT_SECONDS = 60.0
#: Seconds one awaited outcome (a message materialised, a run parked or ended, a send at the sink) may
#: take before the demo reports the step as failed (sized: each takes under 3 s with the intervals below).
DEMO_STEP_TIMEOUT_SECONDS = 45.0
#: Seconds between two readings while the demo waits for an outcome (sized: a person watching).
DEMO_POLL_INTERVAL_SECONDS = 0.2
#: Seconds one HTTP request to the demo node, or one CLI command it runs, may take (sized generously).
DEMO_REQUEST_TIMEOUT_SECONDS = 60.0
#: Seconds the node may take to stop after SIGTERM before it is killed (sized: DBOS shutdown takes ~2 s).
DEMO_STOP_TIMEOUT_SECONDS = 30.0
#: The demo node's dispatch sweep and materialise scan, seconds (must divide 60; sized: fast enough that the
#: demo does not wait, slow enough not to matter on a laptop).
DEMO_DISPATCH_INTERVAL_SECONDS = 1
DEMO_MATERIALISE_SCAN_INTERVAL_SECONDS = 1
#: The demo's front-desk hold window, seconds: a released reply leaves at once so the report can show it.
DEMO_HOLD_WINDOW_SECONDS = 0
#: Seconds the demo watches the smarthost to show that an unreleased Butler send does not leave (two
#: dispatch sweeps at DEMO_DISPATCH_INTERVAL_SECONDS).
DEMO_UNRELEASED_WATCH_SECONDS = 2.0
#: The demo report's narrowest width, characters: tables keep one row per line when the output is a pipe
#: (CI logs), where rich would otherwise assume 80 columns (sized: the widest table, the runs, fits in 160).
DEMO_REPORT_MIN_WIDTH = 160

# --- Web queue (issue 16, ``mail.queue``, ``web.queue``) ------------------------------------------

#: Rows on one page of a mailbox's queue. Sized: a screenful a person scans (Help Scout and FreeScout show
#: 50 conversations per page); bench/web_queue.py measures the page at this size.
QUEUE_PAGE_ROWS = 50
#: Characters of a row's snippet (sized as SEARCH_SNIPPET_CHARS less the room a row's subject takes: one
#: line under the subject at a desktop width).
QUEUE_SNIPPET_CHARS = 120
#: Cases one bulk claim or close may name. Sized: one page of the queue (QUEUE_PAGE_ROWS), the most a
#: person can tick at once; each case is its own transaction, so the request's time grows with it.
QUEUE_BULK_MAX = 50
#: Seconds between two polls of the queue page for new mail (sized: a new message shows within a few
#: seconds, and 10 open tabs cost 2 requests a second, each one statement-bounded page read).
QUEUE_POLL_SECONDS = 5

# --- Web foundation (issue 16: signing in, sessions) ---------------------------------------------
#: Random bytes in a web session's cookie secret (sized as TOKEN_RANDOM_BYTES: 256 bits, beyond guessing).
WEB_SESSION_SECRET_BYTES = 32
#: Seconds a web session lives without a request before it ends (sized: OWASP's session guidance suggests
#: idle timeouts of a few hours at most for low-risk applications; 8 h covers a working day's pauses).
WEB_SESSION_IDLE_SECONDS = 8 * 3600
#: Seconds a web session lives at most from sign-in, however active (sized: a working week, then sign in
#: again; OWASP's absolute timeout guidance for applications used all day).
WEB_SESSION_ABSOLUTE_SECONDS = 7 * 24 * 3600
#: Seconds between two writes of a session's last-seen time (sized: the idle lifetime is hours, so a minute
#: of imprecision is nothing, and a page load with several polls does not write each time).
WEB_SESSION_TOUCH_SECONDS = 60
#: The window the sign-in rate limits count attempts in, seconds (sized: OWASP's authentication guidance
#: throttles over minutes; 15 minutes lets a person who mistyped retry soon while bounding a guesser).
WEB_SIGNIN_WINDOW_SECONDS = 15 * 60
#: Sign-in attempts one client (its IP address as the server sees it) may make in the window without
#: opening a session, codes asked for included (sized: a person mistypes a few times; a token of 256 random
#: bits is never guessed, so this bounds the mail a client can make the node send and the load it causes).
WEB_SIGNIN_ATTEMPTS_PER_CLIENT = 20
#: Sign-in attempts naming one address in the window: codes asked for and wrong codes typed (sized: below
#: the per-client limit, so spreading over clients does not multiply the guesses at one person's code;
#: VERIFICATION_MAX_ATTEMPTS bounds the guesses per code besides).
WEB_SIGNIN_ATTEMPTS_PER_ADDRESS = 10

# --- Web conversation (issue 16: the conversation page and the composer) --------------------------------
#: Seconds a composer's presence stays live after its last heartbeat (sized: three heartbeats, so one lost
#: request does not hide a writer, and a closed tab stops warning others within half a minute).
COMPOSER_PRESENCE_TTL_SECONDS = 30
#: Seconds between a composer's heartbeats, and between the page's readings of who holds the case and who
#: is writing (sized: a third of the TTL above; a person notices a colleague within ten seconds).
COMPOSER_PRESENCE_HEARTBEAT_SECONDS = 10
#: Seconds between two draft autosaves while a person types (sized: Gmail and Help Scout save within a few
#: seconds; one PUT per 3 s per open composer is negligible load).
COMPOSER_AUTOSAVE_SECONDS = 3
#: Inline (``cid:``) images a message's HTML frame writes in as ``data:`` URLs, at most, and their bytes in
#: all (sized: a newsletter's logo and a few pictures; beyond that the frame would be a download of its own,
#: and each image costs a parse of the raw message).
FRAME_INLINE_IMAGES_MAX = 20
FRAME_INLINE_IMAGE_BYTES_MAX = 5 * 1024 * 1024

# --- Stopping the durable executor ---------------------------------------------------------------------

#: Seconds a graceful stop waits for sync workflow bodies already running (a sweep pass, a materialisation,
#: a trigger) before destroying DBOS. Each is bounded well below this by its own budgets (a sweep pass by
#: its batch size, a materialisation by PARSE_* and the hostile-input CPU budget of a few seconds); 10 s
#: keeps the whole stop far inside a service manager's usual 90 s stop timeout (systemd's default).
SHUTDOWN_DRAIN_SECONDS = 10.0
#: At a stop, how long to wait for DBOS's scheduler and queue threads to exit once told to, seconds, before
#: draining (``runtime.shutdown``). Each loop waits on its stop event, or on one poll of the system database
#: (DBOS's queue polling interval is 1 s by default), so 5 s is several polls; past it the stop goes on.
SHUTDOWN_STOP_STARTING_SECONDS = 5.0

# --- Several processes on one database (issue 19) ----------------------------------------------------

#: Seconds between a ``serve`` process's heartbeats in ``executors`` (``mailnode.liveness``); each pass also
#: looks for dead processes to take over. Sized at a fifth of the lease, so a live process misses four beats
#: (a stalled database, a long GC pause) before anyone may judge it dead; one beat is one short UPDATE.
EXECUTOR_HEARTBEAT_SECONDS = 3.0
#: A ``serve`` process whose last heartbeat is older than this is dead: one survivor takes over its pending
#: durable work (materialisation, Butler runs, sweeps, notices) and its dispatch claims. Sized: issue 19 asks
#: for takeover "within a lease" and a two-process kill test under a minute; 15 s is 5 beats, so a false
#: verdict needs a process stalled 15 s (it then stops itself: ``liveness.beat`` finds itself taken over).
#: A predecessor on the same host whose pid no longer runs is dead at once, without waiting for the lease.
EXECUTOR_LEASE_SECONDS = 15.0
#: Exit status of a ``serve`` process that found its heartbeat row taken over by another (it was judged
#: dead while running, so its work is already being redone elsewhere): EX_SOFTWARE from sysexits.h, so a
#: service manager restarts it (under a new executor id).
EXECUTOR_FENCED_EXIT_STATUS = 70

# --- The suppression list (issue 20) ---------------------------------------------------------------------

#: Rows one ``POST /api/suppressions/import`` (or ``mailnode suppressions import``) takes, at most. Sized: the
#: whole import is checked and written in one transaction; 10,000 addresses is a large provider's export
#: page (Postmark exports suppressions in pages of this order) and writes in a few seconds on SQLite.
SUPPRESSION_IMPORT_MAX_ROWS = 10_000
#: Bytes of one import's CSV body, at most. Sized: 10,000 rows of a 254-character address (RFC 5321 §4.5.3.1.3
#: bounds a path to 256) plus a reason and a note of SUPPRESSION_NOTE_MAX_CHARS fit in well under 8 MiB.
SUPPRESSION_IMPORT_MAX_BYTES = 8 * 1024 * 1024
#: Characters of a suppression's note and of a removal's reason, at most (sized: a sentence or two, as the
#: other audited reasons, e.g. a resend's 300).
SUPPRESSION_NOTE_MAX_CHARS = 300
#: Characters of the list's search text (``q``), at most (sized: an address is at most 254 characters).
SUPPRESSION_SEARCH_MAX_CHARS = 254

# --- Webhooks to the application (issue 20, "Events to the application") --------------------------------

#: Seconds between webhook passes (DBOS schedule): each reads the events recorded since its cursor, writes
#: the deliveries they call for, and attempts the deliveries that are due (sized: an application sees an
#: event within seconds, like Postmark's and Resend's webhooks; one pass is a few indexed reads).
WEBHOOK_PASS_INTERVAL_SECONDS = 5
#: Seconds the event scan re-reads behind its cursor, so a row committed late with an earlier timestamp is
#: still seen (sized: far above any one transaction's length; the deliveries' unique key drops a re-read).
WEBHOOK_SCAN_OVERLAP_SECONDS = 60
#: Events read per source and organisation in one pass (sized: a busy minute of a small node; the rest is
#: read by the next pass, as the cursor only moves past what was read).
WEBHOOK_SCAN_PAGE_MAX = 500
#: Deliveries attempted in one pass (sized: at the time-out below, a pass stays under a minute).
WEBHOOK_ATTEMPTS_PER_PASS_MAX = 50
#: The delay before each retry, seconds: exponential back-off over a day (Standard Webhooks suggests
#: retrying with exponential back-off for about a day; Svix's schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
#: 10 h). After the last, the endpoint is disabled and the administrators are told.
WEBHOOK_RETRY_SCHEDULE_SECONDS = (5, 300, 1800, 7200, 18000, 36000, 36000)
#: Seconds one delivery attempt may take, connect to last byte (sized: Standard Webhooks asks receivers to
#: answer quickly and queue the work; Svix and Stripe give a receiver 15 s).
WEBHOOK_TIMEOUT_SECONDS = 15.0
#: Bytes of a receiver's answer read at most; the rest is never read (sized: an acknowledgement is a few
#: bytes; 64 KiB keeps an error page readable in the attempt log).
WEBHOOK_RESPONSE_MAX_BYTES = 64 * 1024
#: Characters of a receiver's answer kept in the attempt log (sized: one screen).
WEBHOOK_RESPONSE_KEPT_CHARS = 2000
#: Webhook endpoints per organisation, at most (sized: Postmark allows 10 per server; a few per application).
WEBHOOK_ENDPOINTS_PER_ORG_MAX = 50
#: A webhook URL's length at most, characters (sized: RFC 9110 asks for at least 8000; 2048 is the common
#: browser floor and ample for a receiver's path).
WEBHOOK_URL_MAX_CHARS = 2048
#: Tags in an endpoint's tag filter at most (sized: as many as a send may carry, a handful).
WEBHOOK_TAG_FILTER_MAX = 10
#: Random bytes of a node-generated signing secret (Standard Webhooks: between 24 and 64 bytes).
WEBHOOK_SECRET_BYTES = 32
#: Seconds a claimed delivery stays unattempted by others (sized: the time-out above, twice, and the write).
WEBHOOK_CLAIM_LEASE_SECONDS = 60

# web: controls (issue 21)
#: Domain pauses listed on /limits/pauses besides every one in force or asked for (sized: a screen of recent
#: history; pauses are rare, a few a month on a busy node).
WEB_CONTROLS_PAUSES_SHOWN = 50
#: Legal holds per page of /limits/holds (sized: a screen; an organisation holds a handful of matters).
WEB_CONTROLS_HOLDS_PAGE = 50
#: Mailboxes offered in the hold form's choice (sized: the inbox switcher's order of magnitude; an
#: organisation with more names the mailbox id in the field below the choice).
WEB_CONTROLS_MAILBOX_CHOICES = 200
#: Suppressions per page of /limits/suppressions (sized: a screen of addresses, as the API's default page).
WEB_CONTROLS_SUPPRESSIONS_PAGE = 50
#: Lines of an import's per-line result shown on the page (sized: a screen; the counts cover the rest, and the
#: import itself is bounded by SUPPRESSION_IMPORT_MAX_ROWS).
WEB_CONTROLS_IMPORT_LINES_SHOWN = 200

# web: butlers (issue 21)
#: Butlers on one page of ``/butlers`` (sized: an organisation runs a handful; 100 keeps the page one screen
#: of rows and one statement per Butler for its last runs within the page budget of docs/performance.md).
WEB_BUTLERS_PER_PAGE = 100
#: Last runs shown per Butler on ``/butlers`` and summed for its spend (sized: enough to see a trend at a glance).
WEB_BUTLER_LAST_RUNS = 5
#: Recent runs on a Butler's page, and runs offered to a dry run in the editor (sized: one screen).
WEB_BUTLER_RECENT_RUNS = 20
#: Lines of context around each change in the publication diff (difflib's and git's default).
WEB_BUTLER_DIFF_CONTEXT_LINES = 3
#: Milliseconds the editor waits after the last keystroke before asking the checker (sized: the usual 300-500 ms
#: typing pause; a check of the largest allowed source takes a few ms on the server).
WEB_BUTLER_CHECK_DEBOUNCE_MS = 400

# web: people (issue 21)
#: People, teams and mailboxes the People and access pages read at most, each (sized: one page of the API's
#: LIST_LIMIT_MAX; a matrix longer than that is read through the API's filters, and past it the page says
#: that the rest are not shown).
WEB_PEOPLE_ROWS_MAX = 500

# web: waiting (issue 21)
#: Characters of a decision's reason at most (``approvals.check_reason``; sized: a sentence or two, shown
#: beside the decision and kept in the audit chain; far above what a person types in the page's field).
APPROVAL_DECISION_REASON_MAX_CHARS = 500
#: Butler proposals and approvals shown on ``/waiting`` per section (sized: a screen a person reads
#: through; the rest stays counted in the header and shows as the first ones are decided).
WAITING_PAGE_MAX = 50
#: Statements the header's "Waiting for me" count may cost (measured: the decide and propose scopes, the
#: administrator check, and one count each of approvals and Butler proposals).
WAITING_COUNT_MAX_STATEMENTS = 5
#: Statements ``/waiting``'s reads may cost, whatever the number of rows (measured: the scopes, the
#: approvals with their stages, decisions, pauses, lifts, grants, sends and names, and the proposals with
#: their parents; asserted by a test with one row and with several).
WAITING_PAGE_MAX_STATEMENTS = 20

# web: sends (issue 21)
#: Sends per page of the web's Sends list (sized: one screen of rows to scan; the API's LIST_LIMIT_DEFAULT is
#: the same order, and a page of 50 reads in a fixed number of statements, so the page size bounds its time).
WEB_SENDS_PAGE_SIZE = 50
