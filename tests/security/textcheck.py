#!/usr/bin/python3
"""textcheck.py - what gpuprof printed is safe for a terminal.

  textcheck.py text FILE [WANT...]
      FILE is valid UTF-8 without a C0 control but tab and newline, DEL or
      a C1 control, and holds each WANT (a literal text) somewhere.
  textcheck.py json FILE KEY WANT
      FILE is one valid JSON document, safe as above, in which some object
      has KEY equal to WANT.
  textcheck.py prom FILE LABEL WANT
      FILE parses with prometheus_client's text parser, is safe as above,
      and some sample has label LABEL equal to WANT.
Prints one line per finding; exit 0 when all hold, 1 when not.
"""
import json
import sys


def safe(path):
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        print("invalid UTF-8 at byte %d: %r" % (e.start, data[max(0, e.start - 20):e.start + 5]))
        return None
    for i, ch in enumerate(text):
        o = ord(ch)
        if (o < 0x20 and ch not in "\n\t") or o == 0x7F or 0x80 <= o <= 0x9F:
            print("control character U+%04X at %d: %r" % (o, i, text[max(0, i - 20):i + 5]))
            return None
    return text


def walk(v, key, want):
    if isinstance(v, dict):
        if v.get(key) == want:
            return True
        return any(walk(x, key, want) for x in v.values())
    if isinstance(v, list):
        return any(walk(x, key, want) for x in v)
    return False


def main(argv):
    mode, path = argv[1], argv[2]
    text = safe(path)
    if text is None:
        return 1
    if mode == "text":
        missing = [w for w in argv[3:] if w not in text]
        for w in missing:
            print("missing %r" % w)
        return 1 if missing else 0
    if mode == "json":
        if not walk(json.loads(text), argv[3], argv[4]):
            print("no %s == %r" % (argv[3], argv[4]))
            return 1
        return 0
    if mode == "prom":
        from prometheus_client.parser import text_string_to_metric_families
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.labels.get(argv[3]) == argv[4]:
                    print("found %s{%s=%r}" % (s.name, argv[3], argv[4]))
                    return 0
        print("no sample with %s == %r" % (argv[3], argv[4]))
        return 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
