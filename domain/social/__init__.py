"""The follow graph: follows, blocks, and the lists and flags read from them."""
