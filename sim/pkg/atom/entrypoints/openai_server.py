"""`python -m atom.entrypoints.openai_server` for the simulator: runs
sim/atom_sim_server.py (see sim/pkg/atom/__init__.py)."""
import os
import sys

if __name__ == "__main__":
    SIM = os.path.normpath(os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..", ".."))
    sys.path.insert(0, SIM)
    import atom_sim_server  # noqa: E402
    sys.exit(atom_sim_server.main(sys.argv[1:]))
