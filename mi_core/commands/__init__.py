"""Small ``main(argv)`` entry points for ``python -m mi_core <command>``."""
