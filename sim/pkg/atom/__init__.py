"""The simulator's stand-in for ATOM's package path, so that the simulated
server runs as `python -m atom.entrypoints.openai_server`, ATOM's own
command line (scripts/start_atom_server.sh:83): what ATOM's scripts find
with pkill -f 'atom.entrypoints', and what traced's GPU check recognises
as ATOM's. The server itself is sim/atom_sim_server.py."""
