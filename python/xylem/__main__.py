"""``python -m xylem info``: the report ``xylem info`` prints."""
import sys

from . import info


def main(argv: list[str]) -> int:
    if argv[:1] != ["info"]:
        print("usage: python -m xylem info", file=sys.stderr)
        return 2
    print(info(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
