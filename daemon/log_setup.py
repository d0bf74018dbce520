"""Where the daemon's log goes: stderr (the journal, under systemd) or a file logrotate rotates.

A file log uses :class:`logging.handlers.WatchedFileHandler`: before each record it checks
that the path still names the file it has open and reopens it when logrotate has moved it
away, so ``deploy/logrotate/wattsched`` needs neither ``copytruncate`` (which loses lines)
nor a signal to the daemon.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_to_file(path: Path) -> logging.Handler:
    """Send every log record (ours, uvicorn's, the libraries') to ``path`` instead of stderr.

    The folder must exist (systemd's ``LogsDirectory=wattsched`` makes /var/log/wattsched);
    the file is created readable by its owner only. Raises :class:`OSError` naming the path.
    """
    if not path.parent.is_dir():
        raise OSError(f"log_file {path}: the folder {path.parent} does not exist")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    try:
        handler = logging.handlers.WatchedFileHandler(path, encoding="utf-8")
    except OSError as exc:
        raise OSError(f"log_file {path}: {exc.strerror}") from None
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    return handler
