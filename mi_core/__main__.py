import signal
import sys

from mi_core.cli import main

code = main()
signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command is done: a Ctrl-C as Python shuts down is no traceback
sys.exit(code)
