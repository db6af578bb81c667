#!/usr/bin/env python3
"""gpdq.py - read a gpuprof SQLite profile (docs/FORMATS.md) for tests.

Usage in tests:  python3 gpdq.py DB CHECK [args...]
Every check prints what it found and exits 1 with a message when an
assertion fails, so shell tests stay one line per assertion.
"""
import json
import sqlite3
import sys


class Profile:
    def __init__(self, path):
        self.db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        self.mid = {n: i for i, n in self.db.execute("SELECT id, name FROM metric_desc")}
        self.ctx = {}
        for cid, parent, kind, label, raw in self.db.execute(
                "SELECT id, parent, kind, label, raw_name FROM context"):
            self.ctx[cid] = (parent, kind, label or "", raw or "")
        self.funcs = {}
        for cid, fn in self.db.execute("SELECT context_id, function FROM frame ORDER BY depth"):
            self.funcs.setdefault(cid, []).append(fn or "")

    def values(self, metric, pid=None):
        """{context id: value summed over profiles (or one pid)}"""
        q = ("SELECT m.context_id, SUM(m.value) FROM metric m JOIN profile p ON p.id = m.profile_id "
             "WHERE m.metric_id = ?" + (" AND p.pid = ?" if pid else "") + " GROUP BY m.context_id")
        args = (self.mid[metric],) + ((pid,) if pid else ())
        return dict(self.db.execute(q, args).fetchall())

    def path_functions(self, cid):
        """All source function names on the path root..cid (inlined frames included)."""
        names = []
        seen = 0
        while cid and cid in self.ctx and seen < 10000:
            names = self.funcs.get(cid, []) + [self.ctx[cid][2]] + names
            cid = self.ctx[cid][0]
            seen += 1
        return names

    def kernel_of(self, cid):
        return self.ctx.get(cid, (0, 0, "", ""))

    def under(self, cid, fn):
        return any(fn == n or n.startswith(fn + "(") for n in self.path_functions(cid))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    db, check, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    p = Profile(db)
    if check == "kernel-count":            # KERNEL_NAME EXPECTED [PID]
        name, want = args[0], float(args[1])
        pid = int(args[2]) if len(args) > 2 else None
        got = sum(v for c, v in p.values("GKER:COUNT", pid).items()
                  if name in (p.ctx[c][3], p.ctx[c][2]))
        print("kernel-count %s = %g (want %g)" % (name, got, want))
        if got != want: fail("kernel %s launched %g times, expected %g" % (name, got, want))
    elif check == "metric-total":          # METRIC EXPECTED [PID]
        pid = int(args[2]) if len(args) > 2 else None
        got = sum(p.values(args[0], pid).values())
        print("metric-total %s = %g (want %s)" % (args[0], got, args[1]))
        if got != float(args[1]): fail("%s total %g, expected %s" % (args[0], got, args[1]))
    elif check == "metric-positive":       # METRIC
        got = sum(p.values(args[0]).values())
        print("metric-positive %s = %g" % (args[0], got))
        if not got > 0: fail("%s is not positive" % args[0])
    elif check == "only-under":            # METRIC FUNCTION: every non-zero value lies below FUNCTION
        bad = [(c, v) for c, v in p.values(args[0]).items() if v and not p.under(c, args[1])]
        total = sum(p.values(args[0]).values())
        print("only-under %s %s: total %g, outside %d contexts" % (args[0], args[1], total, len(bad)))
        if not total > 0: fail("%s is zero" % args[0])
        if bad: fail("%s found outside %s: %s" % (args[0], args[1],
                     [(p.path_functions(c), v) for c, v in bad][:3]))
    elif check == "kernel-under":          # KERNEL FUNCTION: the kernel's every launch is below FUNCTION
        vals = {c: v for c, v in p.values("GKER:COUNT").items() if args[0] in (p.ctx[c][3], p.ctx[c][2])}
        if not vals: fail("kernel %s not found" % args[0])
        bad = [c for c in vals if not p.under(c, args[1])]
        print("kernel-under %s %s: %d contexts, %d outside" % (args[0], args[1], len(vals), len(bad)))
        if bad: fail("kernel %s launched outside %s: %s" % (args[0], args[1], p.path_functions(bad[0])))
    elif check == "module-under":          # METRIC MODULE_SUBSTR: every non-zero value has a frame of that module on its path
        mods = {}
        for cid, mod in p.db.execute("SELECT id, module FROM context"):
            mods[cid] = mod or ""
        vals = {c: v for c, v in p.values(args[0]).items() if v}
        def has(c):
            n = 0
            while c and c in p.ctx and n < 10000:
                if args[1] in mods.get(c, ""): return True
                c, n = p.ctx[c][0], n + 1
            return False
        bad = [c for c in vals if not has(c)]
        print("module-under %s %s: %d contexts, %d outside" % (args[0], args[1], len(vals), len(bad)))
        if not vals: fail("%s is zero" % args[0])
        if bad: fail("%s outside module %s" % (args[0], args[1]))
    elif check == "processes":             # EXPECTED count of profiles with GPU metrics
        # (helpers such as PoCL's linker inherit LD_PRELOAD and register too)
        n = p.db.execute("SELECT COUNT(DISTINCT profile_id) FROM metric").fetchone()[0]
        print("processes = %d (want %s)" % (n, args[0]))
        if n != int(args[0]): fail("%d profiles, expected %s" % (n, args[0]))
    elif check == "pids":                  # print pid list
        print(" ".join(str(r[0]) for r in p.db.execute("SELECT pid FROM profile ORDER BY pid")))
    elif check == "drops":                 # EXPECTED total drops
        n = p.db.execute("SELECT COALESCE(SUM(drops),0) FROM profile").fetchone()[0]
        print("drops = %d (want %s)" % (n, args[0]))
        if n != int(args[0]): fail("drops %d, expected %s" % (n, args[0]))
    elif check == "sql":                   # SQL: print rows as JSON
        print(json.dumps(p.db.execute(args[0]).fetchall()))
    else:
        fail("unknown check " + check)


if __name__ == "__main__":
    main()
