"""Media decoding and checks behind ``domain.media.ports``: the processor (type by the
bytes, container checks, photo variants with Pillow and pillow-heif, video transcodes
with PyAV) and the known-bad hash list."""
