#!/usr/bin/env python3
"""scripts/device/model_bench_gpu.sh's packing without a GPU: the script runs in a scratch copy of
the repository's layout with a stand-in for scripts/model_bench.sh that writes incompressible
files into the results folder. A pack over TILESMITH_PACK_PART_BYTES comes back as parts that
each fit (the device tool leaves larger files out, and a call's results with them), the parts
join to the whole folder, a later call carried the parts unpacks them and keeps what they hold,
and a small pack stays one file. TILESMITH_RESULTS_PACK names the pack to start from; named and
missing, unreadable or holding no results folder, the call stops (exit 2) before the benchmark runs.

    python3 tests/scripts/model_bench_gpu_test.py        (ctest: model_bench_gpu_script_test)
"""

import glob
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Stands in for the benchmark: one file of $STUB_BYTES random bytes a call, named by $STUB_NAME.
STUB = """#!/usr/bin/env bash
res=$1
head -c "$STUB_BYTES" /dev/urandom > "$res/$STUB_NAME"
echo "stub benchmark wrote $res/$STUB_NAME"
"""


class PackedResults(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="model_bench_gpu_")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def tree(self, name):
        """A scratch repository root holding the device script, its environment and the stub."""
        root = os.path.join(self.tmp, name)
        os.makedirs(os.path.join(root, "scripts", "device"))
        for f in ("model_bench_gpu.sh", "bundle_env.sh"):
            shutil.copy(os.path.join(ROOT, "scripts", "device", f), os.path.join(root, "scripts", "device", f))
        stub = os.path.join(root, "scripts", "model_bench.sh")
        with open(stub, "w") as f:
            f.write(STUB)
        os.chmod(stub, 0o755)
        return root

    def call(self, root, out, stub_bytes, stub_name, part_bytes, pack=None, rc=0):
        env = dict(os.environ, OUT=out, STUB_BYTES=str(stub_bytes), STUB_NAME=stub_name,
                   TILESMITH_PACK_PART_BYTES=str(part_bytes), TILESMITH_BIN=os.path.join(root, "no-bin"))
        env.pop("TILESMITH_CALL_LIMIT_S", None)
        env.pop("TILESMITH_RESULTS_PACK", None)
        if pack is not None:
            env["TILESMITH_RESULTS_PACK"] = pack
        os.makedirs(out, exist_ok=True)
        p = subprocess.run(["bash", "scripts/device/model_bench_gpu.sh"], cwd=root, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
        return p.stdout + p.stderr

    def joined_members(self, parts, into):
        with open(into, "wb") as w:
            for part in parts:
                with open(part, "rb") as r:
                    w.write(r.read())
        with tarfile.open(into) as t:
            return {m.name: m.size for m in t.getmembers() if m.isfile()}

    def test_a_large_pack_comes_back_in_parts_that_fit_and_join(self):
        root, out = self.tree("first"), os.path.join(self.tmp, "out1")
        said = self.call(root, out, 200_000, "shape-a.bin", 65_536)
        parts = sorted(glob.glob(os.path.join(out, "model-bench.tgz.part-*")))
        self.assertGreaterEqual(len(parts), 4, said)
        self.assertFalse(os.path.exists(os.path.join(out, "model-bench.tgz")), "the whole pack left beside its parts")
        self.assertTrue(all(os.path.getsize(p) <= 65_536 for p in parts))
        self.assertIn("join them", said)
        members = self.joined_members(parts, os.path.join(self.tmp, "joined.tgz"))
        self.assertEqual(members.get("results/model-bench/shape-a.bin"), 200_000)

        # The next call, carried the parts (not a joined file): it unpacks them and keeps what they held.
        second = self.tree("second")
        os.makedirs(os.path.join(second, "results"))
        for p in parts:
            shutil.copy(p, os.path.join(second, "results", os.path.basename(p)))
        out2 = os.path.join(self.tmp, "out2")
        self.call(second, out2, 1_000, "shape-b.bin", 65_536)
        parts2 = sorted(glob.glob(os.path.join(out2, "model-bench.tgz.part-*")))
        members = self.joined_members(parts2, os.path.join(self.tmp, "joined2.tgz"))
        self.assertEqual(members.get("results/model-bench/shape-a.bin"), 200_000)
        self.assertEqual(members.get("results/model-bench/shape-b.bin"), 1_000)

    def test_a_small_pack_stays_one_file_and_replaces_older_parts(self):
        root, out = self.tree("small"), os.path.join(self.tmp, "out")
        os.makedirs(out)
        with open(os.path.join(out, "model-bench.tgz.part-00"), "wb") as f:
            f.write(b"left from an earlier call")
        said = self.call(root, out, 1_000, "shape-c.bin", 65_536)
        self.assertIn("carry it in as results/model-bench.tgz", said)
        self.assertEqual(glob.glob(os.path.join(out, "model-bench.tgz.part-*")), [])
        with tarfile.open(os.path.join(out, "model-bench.tgz")) as t:
            self.assertIn("results/model-bench/shape-c.bin", t.getnames())

    def test_a_named_pack_is_where_the_call_starts(self):
        first, out = self.tree("first"), os.path.join(self.tmp, "out1")
        self.call(first, out, 1_000, "shape-a.bin", 65_536)
        second = self.tree("second")
        os.makedirs(os.path.join(second, "notes"))
        shutil.copy(os.path.join(out, "model-bench.tgz"), os.path.join(second, "notes", "results.tgz"))
        out2 = os.path.join(self.tmp, "out2")
        self.call(second, out2, 1_000, "shape-b.bin", 65_536, pack="notes/results.tgz")
        with tarfile.open(os.path.join(out2, "model-bench.tgz")) as t:
            names = t.getnames()
        self.assertIn("results/model-bench/shape-a.bin", names)
        self.assertIn("results/model-bench/shape-b.bin", names)

    def test_a_named_pack_that_cannot_be_read_stops_the_call_before_the_benchmark(self):
        root = self.tree("bad")
        os.makedirs(os.path.join(root, "notes"))
        with open(os.path.join(root, "notes", "broken.tgz"), "wb") as f:
            f.write(b"not a tarball")
        other = os.path.join(self.tmp, "other")
        os.makedirs(os.path.join(other, "elsewhere"))
        with open(os.path.join(other, "elsewhere", "x.txt"), "w") as f:
            f.write("x")
        with tarfile.open(os.path.join(root, "notes", "foreign.tgz"), "w:gz") as t:
            t.add(os.path.join(other, "elsewhere"), arcname="elsewhere")
        for pack, says in (("notes/missing.tgz", "neither a file nor parts"),
                           ("notes/broken.tgz", "not a readable pack"),
                           ("notes/foreign.tgz", "holds no results/model-bench folder")):
            out = os.path.join(self.tmp, "out-" + os.path.basename(pack))
            said = self.call(root, out, 1_000, "shape-x.bin", 65_536, pack=pack, rc=2)
            self.assertIn(says, said)
            self.assertIn(pack, said)
            self.assertNotIn("stub benchmark wrote", said)
            self.assertFalse(os.path.exists(os.path.join(root, "results", "model-bench", "shape-x.bin")))
            shutil.rmtree(os.path.join(root, "results"), ignore_errors=True)
            shutil.rmtree(os.path.join(root, "elsewhere"), ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
