"""Slips a learner makes in notebook 16 (checkpoints), for scripts/slip_table.py: per check
cell, (what the learner did, the text of the answer, the text with the slip, a word the
report's first line must hold)."""

SLIPS = {
    "ex16-1-check": [
        ("the header without the parameter count", "return 8 + 4 + 4 + records",
         "return 8 + 4 + records", "header"),
        ("the values as float64", "8 + 4 * p.numel()", "8 + 8 * p.numel()", "float64"),
        ("the dims as u64", "4 * p.ndim", "8 * p.ndim", "u32"),
    ],
    "ex16-2-check": [
        ("the hex digits in capitals", 'file.write(f"{crc:08x}")', 'file.write(f"{crc:08X}")',
         "capitals"),
        ("the CRC-32 in decimal", 'file.write(f"{crc:08x}")', "file.write(str(crc))",
         "decimal"),
        ("the checksums never compared", 'if f"{crc:08x}" != stored:', "if False:",
         "compared"),
        ("the file loaded before the comparison",
         'crc = zlib.crc32(file.read())\n    with open(path + ".crc32") as file:',
         'crc = zlib.crc32(file.read())\n    checkpoint.load(path, module, optimizer, rng)\n'
         '    with open(path + ".crc32") as file:', "before"),
    ],
    "ex16-3-check": [
        ("the fresh lr kept", "{1e-3: float(np.float32(3e-3)), 3e-3: 3e-3}",
         "{1e-3: 1e-3, 3e-3: 3e-3}", "kept"),
        ("3e-3 exactly", "{1e-3: float(np.float32(3e-3)),", "{1e-3: 3e-3,", "float32"),
        ("the stored float32 both times", "3e-3: 3e-3}", "3e-3: float(np.float32(3e-3))}",
         "live"),
    ],
}
