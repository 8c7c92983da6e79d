"""``python -m app.cli``: how ``roost run`` starts its worker (``-m app.cli worker``)."""

from app.cli import main

if __name__ == "__main__":
    main()
