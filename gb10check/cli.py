"""gb10check command line: parse (and the subcommands other modules add)."""

import argparse
import json
import signal
import sys

from . import facts


def cmd_parse(args: argparse.Namespace) -> int:
    if args.list or not args.kind:
        width = max(map(len, facts.KINDS))
        for name, kind in facts.KINDS.items():
            print(f"{name:<{width}}  {kind.what}")
        return 0
    if args.kind not in facts.KINDS:
        print(f"gb10check parse: unknown kind {args.kind!r}; `gb10check parse --list` shows the kinds", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.file in (None, "-") else open(args.file, encoding="utf-8", errors="replace").read()
    except OSError as exc:
        print(f"gb10check parse: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        result = facts.parse(args.kind, text)
    except facts.ParseError as exc:
        print(f"gb10check parse: {exc}", file=sys.stderr)
        return 1
    json.dump(facts.to_jsonable(result), sys.stdout, indent=2)
    print()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gb10check", description="Checks for vLLM tensor parallelism across GB10 machines.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="print what the suite reads from a tool's output, as JSON")
    p.add_argument("kind", nargs="?", help="what the text is (see --list)")
    p.add_argument("file", nargs="?", help="file to read; - or nothing for standard input")
    p.add_argument("--list", action="store_true", help="list the kinds")
    p.set_defaults(func=cmd_parse)
    return parser


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `gb10check parse ... | head` ends quietly
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
