#!/usr/bin/env python3
"""The house's rules (docs/ARCHITECTURE.md), checked on the sources and on a build:
- every #include "ROOM/..." of a room's files points to a room it may use (arrows point down);
- no room holds 20 % or more of the code (lines of .cpp, .hpp, .cu, .cuh, .inc);
- vigil-listen links neither the stages nor the service nor CUDA (read from the build's
  build.ninja, when a build folder is given).
Exit 0 when all holds, 1 with each breach. Usage: check_structure.py SOURCE_DIR [BUILD_DIR] |
--self-test   (ctest: Structure.RoomsIncludeOnlyWhatTheyMayUse, Structure.TheCheckCatchesWhatItMust)"""
import os, re, sys

# What each room may include besides itself: the layers of docs/ARCHITECTURE.md.
MAY_USE = {
    "core": set(),
    "dsp": {"core"},
    "acquisition": {"core", "wire"},
    "cuda": {"core", "dsp"},
    "wire": {"core", "dsp"},
    "config": {"core", "dsp", "acquisition", "wire"},
    "stages": {"core", "dsp", "cuda", "wire", "config"},
    "sinks": {"core", "dsp", "acquisition", "wire", "config"},
    "pipeline": {"core", "dsp", "cuda", "wire", "config", "stages", "sinks", "acquisition"},
    "systemd": {"core"},
    "web": {"core", "dsp", "wire"},
    "apps": {"core", "dsp", "cuda", "wire", "config", "stages", "acquisition", "sinks", "pipeline", "systemd", "web"},
}
SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
SHARE_LIMIT = 0.20
# Libraries vigil-listen must not link: the stage adapters, the service's runtime, CUDA.
LISTEN_MUST_NOT_LINK = ("libvigil_stages.a", "libvigil_pipeline.a", "libvigil_cuda.a", "libcudart", "libcufft")


def code_files(root, room):
    for dirpath, _, files in os.walk(os.path.join(root, room)):
        for f in sorted(files):
            if f.endswith(SUFFIXES):
                yield os.path.join(dirpath, f)


def check_includes(root):
    errors = []
    for room, allowed in MAY_USE.items():
        for path in code_files(root, room):
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) in MAY_USE and m.group(1) != room and m.group(1) not in allowed:
                        errors.append(f"{os.path.relpath(path, root)}:{lineno}: {room}/ includes {m.group(1)}/ "
                                      f"(it may use {', '.join(sorted(allowed)) or 'nothing of Vigil'})")
    return errors


def room_shares(root):
    lines = {}
    for room in MAY_USE:
        n = 0
        for path in code_files(root, room):
            with open(path, encoding="utf-8", errors="replace") as fh:
                n += sum(1 for _ in fh)
        lines[room] = n
    total = sum(lines.values()) or 1
    return {room: n / total for room, n in lines.items()}, lines


def check_shares(root):
    shares, lines = room_shares(root)
    return [f"{room}/ holds {share:.1%} of the code ({lines[room]} lines), at least {SHARE_LIMIT:.0%}"
            for room, share in sorted(shares.items()) if share >= SHARE_LIMIT]


def check_listen_links(build):
    ninja = os.path.join(build, "build.ninja")
    with open(ninja, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    m = re.search(r"^build apps/vigil-listen: .*?\n((?:  .*\n)*)", text, re.M)
    if not m:
        return [f"{ninja}: no link step for apps/vigil-listen"]
    return [f"vigil-listen links {lib} ({ninja})" for lib in LISTEN_MUST_NOT_LINK if lib in m.group(0)]


def check(root, build=None):
    errors = check_includes(root) + check_shares(root)
    if build:
        errors += check_listen_links(build)
    return errors


def self_test():
    """The check against trees made here: it must name each breach and nothing else."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as fh:
                fh.write(text)
        filler = "int x;\n" * 100
        for room in MAY_USE:
            put(f"{room}/a.hpp", filler)
        put("acquisition/b.cpp", '#include "core/clock.hpp"\n#include "dsp/fir.hpp"\n')
        put("wire/c.cpp", '// #include "pipeline/x.hpp" is a comment\n  #include "pipeline/graph.hpp"\n')
        put("core/d.cpp", '#include <vector>\n#include "core/e.hpp"\n#include "gtest/gtest.h"\n')
        put("dsp/big.cpp", "int y;\n" * 400)
        put("build/build.ninja", "build apps/vigil-listen: CXX_EXECUTABLE_LINKER__vigil-listen_RelWithDebInfo x.o | "
                                 "wire/libvigil_wire.a\n  LINK_LIBRARIES = wire/libvigil_wire.a  "
                                 "pipeline/libvigil_pipeline.a  -lpthread\n\nbuild other: phony\n")
        errors = check(tmp, os.path.join(tmp, "build"))
    want = ["acquisition/b.cpp:2: acquisition/ includes dsp/ (it may use core, wire)",
            "wire/c.cpp:2: wire/ includes pipeline/ (it may use core, dsp)",
            f"dsp/ holds {500 / (100 * len(MAY_USE) + 407):.1%} of the code (500 lines), at least 20%",
            f"vigil-listen links libvigil_pipeline.a ({os.path.join(tmp, 'build', 'build.ninja')})"]
    if errors != want:
        print("check_structure --self-test: expected\n  " + "\n  ".join(want) + "\ngot\n  " + "\n  ".join(errors))
        return 1
    print("check_structure --self-test: a forbidden include, an oversized room and a forbidden link are caught")
    return 0


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--self-test" in sys.argv:
        return self_test()
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    build = args[1] if len(args) > 1 else None
    errors = check(root, build)
    for e in errors:
        print("check_structure: " + e)
    if errors:
        return 1
    shares, _ = room_shares(root)
    largest = max(shares, key=shares.get)
    print(f"check_structure: every include points down; the largest room, {largest}/, holds {shares[largest]:.1%}"
          + ("; vigil-listen links no stage, service or CUDA library" if build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
