-- Test profile for the gpuprof CLI (tests/cli/test_cli.py).
-- Schema: docs/FORMATS.md, copied literally.  Known numbers (ns):
--   axpy_kernel (ctx 0x9000000000000000): GKER 3e6 (pid 1001) + 1e6 (pid 1002), 10 + 5 launches
--   axpy_kernel (ctx 12, recursive solve):  GKER 1e6, 1 launch (pid 1001)
--   <gpu copy>  (ctx 7): GXCOPY 1e6, 1 MiB H2D, 2 copies (pid 1001)
--   => root GPUOP 6e6 (0.006 s), GKER 5e6; main 100 %, solve 83.3 %, copy_in 16.7 %
PRAGMA user_version = 1;
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
  -- format='gpuprof', format_version='1', host, created_ns, clock='CLOCK_MONOTONIC_RAW'
CREATE TABLE metric_desc(id INTEGER PRIMARY KEY, name TEXT NOT NULL,
  unit TEXT NOT NULL, description TEXT NOT NULL);      -- common/.../metric.h
CREATE TABLE profile(
  id INTEGER PRIMARY KEY,          -- daemon's profile id
  pid INTEGER NOT NULL, ppid INTEGER, uid INTEGER NOT NULL, gid INTEGER NOT NULL,
  exe TEXT, argv TEXT,             -- argv: JSON array of strings
  hostname TEXT, job_id TEXT, step_id TEXT, rank INTEGER, local_rank INTEGER,
  start_ns INTEGER, end_ns INTEGER,-- end_ns NULL while running
  state TEXT NOT NULL,             -- 'running' | 'exited' | 'lost' (daemon died, not yet handed back)
  records INTEGER NOT NULL DEFAULT 0, drops INTEGER NOT NULL DEFAULT 0,
  error TEXT);                     -- why the daemon stopped trusting its region
CREATE TABLE backend(profile_id INTEGER NOT NULL, api TEXT NOT NULL,
  enabled INTEGER NOT NULL, code INTEGER, reason TEXT,
  PRIMARY KEY(profile_id, api));
CREATE TABLE module(profile_id INTEGER NOT NULL, id INTEGER NOT NULL,
  path TEXT NOT NULL, build_id TEXT, base INTEGER, size INTEGER,
  PRIMARY KEY(profile_id, id));
CREATE TABLE string(profile_id INTEGER NOT NULL, id INTEGER NOT NULL,
  kind INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY(profile_id, id));
CREATE TABLE context(
  id INTEGER PRIMARY KEY,          -- Merkle context id
  parent INTEGER NOT NULL,         -- 0 for the root
  kind INTEGER NOT NULL,           -- gpuprof.NodeKind
  module TEXT, build_id TEXT, offset INTEGER,
  label TEXT,                      -- function / placeholder / demangled kernel
  raw_name TEXT);                  -- mangled kernel name
CREATE TABLE frame(                -- symbolized source frames of a FRAME context
  context_id INTEGER NOT NULL, depth INTEGER NOT NULL,   -- 0 = outermost
  function TEXT, file TEXT, line INTEGER, inlined INTEGER NOT NULL,
  PRIMARY KEY(context_id, depth));
CREATE TABLE cct_local(            -- shim node id -> context, to resume after a restart
  profile_id INTEGER NOT NULL, local_id INTEGER NOT NULL, context_id INTEGER NOT NULL,
  PRIMARY KEY(profile_id, local_id)) WITHOUT ROWID;
CREATE TABLE metric(               -- sparse exclusive metric values
  profile_id INTEGER NOT NULL, context_id INTEGER NOT NULL,
  metric_id INTEGER NOT NULL, value REAL NOT NULL,
  PRIMARY KEY(profile_id, context_id, metric_id)) WITHOUT ROWID;
CREATE TABLE gpubin(hash TEXT PRIMARY KEY, kind TEXT NOT NULL, size INTEGER NOT NULL,
  path TEXT NOT NULL,              -- 'gpubins/<hash>.gpubin', relative to the db's folder
  profile_id INTEGER);             -- first profile that loaded it

INSERT INTO meta VALUES ('format', 'gpuprof'), ('format_version', '1'), ('host', 'testhost'),
  ('created_ns', '1000'), ('clock', 'CLOCK_MONOTONIC_RAW');
INSERT INTO metric_desc VALUES (0, 'GPUOP', 'ns', 'Total GPU operation time'), (1, 'GKER', 'ns', 'GPU time: kernel execution');

INSERT INTO profile VALUES (1, 1001, 1, 1000, 1000, '/opt/app/bin/app', '["app","-n","3"]', 'testhost', '77', '0', 0, 0,
  100, 900, 'exited', 100, 3, NULL);
INSERT INTO profile VALUES (2, 1002, 1, 1000, 1000, '/opt/app/bin/app', '["app"]', 'testhost', '77', '0', 1, 1,
  200, 950, 'exited', 50, 0, 'ring 3: index out of range "x\y"' || char(9) || 'end');
INSERT INTO backend VALUES (1, 'opencl', 1, 0, ''), (1, 'cuda', 0, -4191, 'libcuda.so.1: cannot open shared object file'),
  (2, 'opencl', 1, 0, '');

INSERT INTO context VALUES (1, 0, 0, NULL, NULL, 0, '<program root>', NULL);
INSERT INTO context VALUES (2, 1, 1, '/opt/app/bin/app', NULL, 4096, 'main', NULL);
INSERT INTO context VALUES (3, 2, 1, '/opt/app/bin/app', NULL, 8192, 'solve', NULL);
INSERT INTO context VALUES (4, 3, 2, NULL, NULL, 0, '<gpu kernel>', NULL);
INSERT INTO context VALUES (-8070450532247928832, 4, 3, NULL, NULL, 0, 'axpy_kernel(float*)', '_Z11axpy_kernelPf');
INSERT INTO context VALUES (6, 2, 1, '/opt/app/bin/app', NULL, 4200, 'copy_in', NULL);
INSERT INTO context VALUES (7, 6, 2, NULL, NULL, 0, '<gpu copy>', NULL);
INSERT INTO context VALUES (8, 2, 1, '/opt/app/bin/app', NULL, 4300, 'idle', NULL);
INSERT INTO context VALUES (9, 8, 2, NULL, NULL, 0, '<gpu kernel>', NULL);
INSERT INTO context VALUES (10, 3, 1, '/opt/app/bin/app', NULL, 8200, 'solve', NULL);
INSERT INTO context VALUES (11, 10, 2, NULL, NULL, 0, '<gpu kernel>', NULL);
INSERT INTO context VALUES (12, 11, 3, NULL, NULL, 0, 'axpy_kernel(float*)', '_Z11axpy_kernelPf');

INSERT INTO frame VALUES (2, 0, 'main', 'app.c', 10, 0);
INSERT INTO frame VALUES (3, 0, 'solve', 'solve.c', 20, 0), (3, 1, 'axpy_launch', 'vec.h', 5, 1);
INSERT INTO frame VALUES (6, 0, 'copy_in', 'copy.c', 7, 0);
INSERT INTO frame VALUES (10, 0, 'solve', 'solve.c', 31, 0);

-- kernel 0x9000000000000000: profile 1 and 2 (node merge sums them)
INSERT INTO metric VALUES (1, -8070450532247928832, 0, 3000000), (1, -8070450532247928832, 1, 3000000),
  (1, -8070450532247928832, 49, 10), (1, -8070450532247928832, 45, 320);
INSERT INTO metric VALUES (2, -8070450532247928832, 0, 1000000), (2, -8070450532247928832, 1, 1000000),
  (2, -8070450532247928832, 49, 5), (2, -8070450532247928832, 45, 160);
-- the copy
INSERT INTO metric VALUES (1, 7, 0, 1000000), (1, 7, 4, 1000000), (1, 7, 25, 1048576), (1, 7, 35, 2);
-- recursive solve's kernel
INSERT INTO metric VALUES (1, 12, 0, 1000000), (1, 12, 1, 1000000), (1, 12, 49, 1), (1, 12, 45, 32);

INSERT INTO gpubin VALUES ('0123456789abcdef0123456789abcdef', 'cubin', 4096,
  'gpubins/0123456789abcdef0123456789abcdef.gpubin', 1);
