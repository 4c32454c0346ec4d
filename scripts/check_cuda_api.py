#!/usr/bin/env python3
"""Every CUDA runtime, cuFFT and CCCL name and every device intrinsic that Vigil's code uses is listed
in docs/JETSON.md ("CUDA APIs and the version each appeared in"), and none appeared after CUDA 12.2
(JetPack 6.0) unless its row says it is behind a CUDART_VERSION guard with a 12.2 path beside it.
Names only in comments or strings do not count. A listed name no code uses any more fails too, so
the table stays the truth. Exit 0 when all holds, 1 with the offending names and where they are.
Usage: check_cuda_api.py [SOURCE_DIR] | --self-test   (ctest: CudaApi.EveryNameIsListedInJetsonMd,
CudaApi.TheCheckCatchesWhatItMust)"""
import os, re, sys

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
ROOT = os.path.abspath(ARGS[0] if ARGS else os.path.join(os.path.dirname(__file__), ".."))
DOC = os.path.join(ROOT, "docs", "JETSON.md")
FOLDERS = ["acquisition", "apps", "bench", "config", "core", "cuda", "dsp", "pipeline", "stages", "systemd",
           "tests", "web", "wire"]
SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
LIMIT = (12, 2)  # JetPack 6.0's CUDA

NAME = re.compile(r"\b(?:cuda[A-Z]\w*|cufft[A-Z]\w*|CUFFT_\w+|CUDART_\w+|cub::\w+|thrust::\w+|"
                  r"__(?:shfl\w*|ballot_sync|any_sync|all_sync|match_\w+|syncwarp|activemask|reduce_\w+|"
                  r"ldg|ldcg|ldcs|ldlu|ldcv|stcg|stcs|stwb|stwt|popc\w*|clz\w*|ffs\w*|brev\w*|f\w+_r[nzud]|"
                  r"float_as_\w+|uint_as_\w+|int_as_\w+|double_as_\w+|threadfence\w*|nanosleep|syncthreads\w*))\b")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([0-9]+\.[0-9]+)\s*\|(.*)\|\s*$")


def strip_comments_and_strings(text):
    """C++ text with comments and string and character literals blanked (raw strings included)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            i = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""')
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            out.append(c + c)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def used_names():
    """{name: [path:line, ...]} over the sources."""
    used = {}
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = strip_comments_and_strings(fh.read())
                for lineno, line in enumerate(text.split("\n"), 1):
                    for m in NAME.finditer(line):
                        used.setdefault(m.group(0), []).append(f"{os.path.relpath(path, ROOT)}:{lineno}")
    return used


def listed_names():
    """{name: (version tuple, note)} from the table in docs/JETSON.md."""
    listed = {}
    with open(DOC, encoding="utf-8") as fh:
        for line in fh:
            m = ROW.match(line.strip())
            if m:
                major, minor = m.group(2).split(".")
                listed[m.group(1)] = ((int(major), int(minor)), m.group(3).strip())
    return listed


def self_test():
    """The check against a tree made here: it must name what is wrong and nothing else."""
    import tempfile
    global ROOT, DOC
    with tempfile.TemporaryDirectory() as tmp:
        ROOT, DOC = tmp, os.path.join(tmp, "docs", "JETSON.md")
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "cuda"))
        with open(DOC, "w") as f:
            f.write("| name | since | note |\n|---|---|---|\n| `cudaMalloc` | 1.0 | |\n"
                    "| `cudaGraphUpload` | 11.1 | |\n| `cudaLaunchKernelEx` | 11.8 | |\n"
                    "| `cudaGraphConditionalHandleCreate` | 12.3 | |\n"
                    "| `cudaStreamBeginCaptureToGraph` | 12.3 | behind CUDART_VERSION >= 12030, 12.2 path beside it |\n")
        with open(os.path.join(tmp, "cuda", "x.cu"), "w") as f:
            f.write('// cudaInComment\nconst char* s = "cudaInString";\nauto r = R"x(cudaInRaw)x";\n'
                    "void f() { cudaMalloc(0, 0); cudaMallocAsync(0, 0, 0); cudaLaunchKernelEx(0, 0);\n"
                    "  cudaGraphConditionalHandleCreate(0); cudaStreamBeginCaptureToGraph(0); }\n")
        errors = check()
    want = ["cudaMallocAsync: used at cuda/x.cu:4 but not listed in docs/JETSON.md",
            "cudaGraphUpload: listed in docs/JETSON.md but no code uses it (remove the row)",
            "cudaGraphConditionalHandleCreate: appeared in CUDA 12.3, after JetPack 6.0's 12.2, and its row names no "
            "CUDART_VERSION guard"]
    if errors != want:
        print("check_cuda_api --self-test: expected\n  " + "\n  ".join(want) + "\ngot\n  " + "\n  ".join(errors))
        return 1
    print("check_cuda_api --self-test: an unlisted name, a stale row and a name after 12.2 are caught; "
          "comments and strings are not read")
    return 0


def check():
    """The problems found, one line each."""
    used, listed = used_names(), listed_names()
    if not listed:
        return [f"no API table in {DOC}"]
    errors = []
    for name in sorted(set(used) - set(listed)):
        errors.append(f"{name}: used at {', '.join(used[name][:3])} but not listed in docs/JETSON.md")
    for name in sorted(set(listed) - set(used)):
        errors.append(f"{name}: listed in docs/JETSON.md but no code uses it (remove the row)")
    for name, (version, note) in sorted(listed.items()):
        if version > LIMIT and "CUDART_VERSION" not in note:
            errors.append(f"{name}: appeared in CUDA {version[0]}.{version[1]}, after JetPack 6.0's 12.2, "
                          "and its row names no CUDART_VERSION guard")
    return errors


def main():
    if "--self-test" in sys.argv:
        return self_test()
    errors = check()
    for e in errors:
        print("check_cuda_api: " + e)
    if errors:
        return 1
    print(f"check_cuda_api: {len(used_names())} CUDA names in use, each listed in docs/JETSON.md, none after CUDA 12.2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
