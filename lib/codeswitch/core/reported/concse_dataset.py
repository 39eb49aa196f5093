"""ConCSE Table 1 (summary of the Koglish datasets) and the exclusion rate quoted in §3.2.

Row labels: ``<dataset>/<task>`` with the paper's task names — ``GLUE/QNLI``,
``GLUE/SST-2``, ``GLUE/CoLA``, ``GLUE/STS-B``, ``GLUE/MRPC``, ``GLUE/RTE``,
``STS/STS-B``, ``STS/STS12`` ... ``STS/STS16``, ``STS/SICK-R``, ``NLI/NLI`` (the
paper prints STS-B in both the GLUE and the STS block, hence the prefix).
Columns: ``Train``, ``Dev``, ``Test``, ``Total``.  Cells the paper leaves blank
(STS has no train split, NLI no dev/test) have no entry.  Numbers are as printed,
including two totals that do not add up (CoLA: 4,341 + 1,087 + 1,358 = 6,786 vs
6,759 printed; STS12: 4,284 vs 4,286; STS14: 3,122 vs 3,112).

``table1_exclusions``: §3.2 step 1 — "GLUE's COLA task data excluded 29.1% of
the entire data" (the only per-task exclusion rate the paper gives).
"""

from . import Reported

_GLUE = {
    "GLUE/QNLI": (61764, 15441, 19303, 96508),
    "GLUE/SST-2": (26552, 6632, 8289, 41473),
    "GLUE/CoLA": (4341, 1087, 1358, 6759),
    "GLUE/STS-B": (4269, 1068, 1335, 6672),
    "GLUE/MRPC": (3610, 904, 1129, 5643),
    "GLUE/RTE": (1642, 412, 514, 2568),
}
_STS = {
    "STS/STS-B": (3334, 3334, 6668),
    "STS/STS12": (2142, 2142, 4286),
    "STS/STS13": (622, 622, 1244),
    "STS/STS14": (1561, 1561, 3112),
    "STS/STS15": (1351, 1351, 2702),
    "STS/STS16": (496, 496, 992),
    "STS/SICK-R": (4767, 4767, 9534),
}
_NOTES = {
    ("GLUE/CoLA", "Total"): "as printed; the splits add up to 6,786",
    ("STS/STS12", "Total"): "as printed; the splits add up to 4,284",
    ("STS/STS14", "Total"): "as printed; the splits add up to 3,122",
}

ENTRIES: list[Reported] = []
for row, values in _GLUE.items():
    for col, v in zip(("Train", "Dev", "Test", "Total"), values):
        ENTRIES.append(Reported("concse", "table1", row, col, float(v), note=_NOTES.get((row, col), "")))
for row, values in _STS.items():
    for col, v in zip(("Dev", "Test", "Total"), values):
        ENTRIES.append(Reported("concse", "table1", row, col, float(v), note=_NOTES.get((row, col), "")))
ENTRIES += [
    Reported("concse", "table1", "NLI/NLI", "Train", 218255.0),
    Reported("concse", "table1", "NLI/NLI", "Total", 218255.0),
    Reported("concse", "table1_exclusions", "GLUE/CoLA", "excluded %", 29.1, note="§3.2 step 1 (text)"),
]
