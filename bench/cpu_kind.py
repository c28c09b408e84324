"""The CPU kind a benchmark ran on, for its table and for which table of a page it belongs in.

Several generations share one `lscpu` name (every AMD EPYC here says "AMD EPYC"), so the kind is
the name, the family and the vector extensions the kernels choose by; the model number is shown
but not part of the key, since VMs of one generation report different ones.
"""
import os
import re
import subprocess

# The extensions s2s's and its peers' kernels pick at run time, narrowest first.
ISA = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def read():
    """(name, family, model, flags) from `lscpu`; "?" and an empty set where it says nothing."""
    name, family, model, flags = "?", "?", "?", set()
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "Model name":
            name = value
        elif key == "CPU family":
            family = value
        elif key == "Model":
            model = value
        elif key == "Flags":
            flags = set(value.split())
    return name, family, model, flags


def describe():
    """(key, text): key names the kind ("AMD EPYC (cpu family 25, avx2 fma avx512f ...)"), text
    adds the model number for the table's first line."""
    name, family, model, flags = read()
    isa = " ".join(f for f in ISA if f in flags) or "no AVX2"
    return (f"{name} (cpu family {family}, {isa})",
            f"{name} (cpu family {family}, model {model}, {isa})")


def write_section(doc, tag, key, table):
    """Puts `table` between this kind's `tag` markers in `doc`, keeping every other kind's table.
    A kind measured for the first time gets a new `### key` section after the last `tag` table
    and the notes under it (or at the end of the page, which is created if missing). The page is
    replaced atomically."""
    begin, end = f"<!-- {tag}:begin {key} -->", f"<!-- {tag}:end {key} -->"
    text = ""
    if os.path.exists(doc):
        with open(doc, encoding="utf-8") as f:
            text = f.read()
    if begin in text and end in text:
        pre, rest = text.split(begin, 1)
        _, post = rest.split(end, 1)
        text = f"{pre}{begin}\n{table}\n{end}{post}"
    else:
        # After the last kind's table and the notes below it: before the next heading.
        last = text.rfind(f"<!-- {tag}:end ")
        cut = len(text)
        if last >= 0:
            after = text.index("-->", last) + 3
            heading_at = re.search(r"^##+ ", text[after:], re.MULTILINE)
            cut = after + heading_at.start() if heading_at else len(text)
        section = f"### {key}\n\n{begin}\n{table}\n{end}\n\n"
        text = text[:cut] + ("\n" if cut == len(text) else "") + section + text[cut:]
    tmp = doc + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, doc)
