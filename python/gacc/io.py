"""All-or-nothing files and result sets, as the C++ tools write them.

Every file gacc writes goes to a temporary name in the same directory, is
flushed (fsync) and renamed over the target: a failure leaves the previous
file and no temporary behind. A result set (gacc-run --output-dir's
`result<j>.npy`, a saved input set's `arg<i>.npy`) is committed by a
`MANIFEST` written last: a first line "gacc-result-set 1", then one line per
file, "<size> <crc32 as 8 hex digits> <name>" (zlib.crc32).
`MANIFEST.pending` without `MANIFEST` marks a write that was interrupted.
A directory with neither was written by hand and is read as it is. See
docs/Robustness.md (lib/Runner/AtomicFile.cpp is the C++ side).
"""

import errno
import itertools
import os
import re
import zlib

MANIFEST = "MANIFEST"
PENDING_MANIFEST = "MANIFEST.pending"
_MAGIC = "gacc-result-set 1"
_counter = itertools.count()
_TEMPORARY = re.compile(r"\..+\.gacc-tmp-([0-9]+)-[0-9]+\Z", re.S)


class ResultSetError(ValueError):
    """A result set that is incomplete or does not match its manifest."""


def _temporary_name(path):
    directory, name = os.path.split(path)
    return os.path.join(directory, ".%s.gacc-tmp-%d-%d" %
                        (name, os.getpid(), next(_counter)))


def _process_exists(pid):
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno != errno.ESRCH
    return True


def remove_stale_temporaries(directory):
    """Removes the temporaries in `directory` whose writer no longer runs
    (left by a killed process); returns how many. The writers below call it
    for the directory they write to, as the C++ tools do."""
    removed = 0
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return 0
    for name in names:
        m = _TEMPORARY.match(name)
        if not m or int(m.group(1)) <= 0:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or _process_exists(pid):
            continue
        path = os.path.join(directory, name)
        if os.path.isfile(path) and not os.path.islink(path):
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
    return removed


def _write_temporary(path, data):
    """Writes and flushes a temporary next to `path`; returns its name."""
    temporary = _temporary_name(path)
    try:
        with open(temporary, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _remove(temporary)
        raise
    return temporary


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sync_directory(directory):
    fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename stands
    finally:
        os.close(fd)


def write_file_atomically(path, data):
    """Writes `data` (bytes or str) to `path` whole or not at all."""
    if isinstance(data, str):
        data = data.encode()
    remove_stale_temporaries(os.path.dirname(path))
    temporary = _write_temporary(path, data)
    try:
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise
    _sync_directory(os.path.dirname(path))


def _parse_manifest(path):
    with open(path) as f:
        lines = f.read().split("\n")
    if not lines or lines[0] != _MAGIC:
        raise ResultSetError("%s: not a gacc result-set manifest (expected "
                             "the first line '%s')" % (path, _MAGIC))
    entries = []
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        parts = line.split(" ", 2)
        if (len(parts) != 3 or not parts[0].isdigit() or len(parts[1]) != 8
                or "/" in parts[2]):
            raise ResultSetError("%s: malformed line %d: '%s'" %
                                 (path, number, line))
        entries.append((int(parts[0]), int(parts[1], 16), parts[2]))
    return entries


def write_result_set(directory, files):
    """Writes `files` ({name: bytes}) as a result set in `directory`."""
    os.makedirs(directory, exist_ok=True)
    remove_stale_temporaries(directory)
    temporaries = {}
    try:
        for name, data in files.items():
            temporaries[name] = _write_temporary(
                os.path.join(directory, name), data)
        manifest = _MAGIC + "\n" + "".join(
            "%d %08x %s\n" % (len(data), zlib.crc32(data), name)
            for name, data in files.items())
        write_file_atomically(os.path.join(directory, PENDING_MANIFEST),
                              manifest)
    except BaseException:
        for temporary in temporaries.values():
            _remove(temporary)
        raise
    manifest_path = os.path.join(directory, MANIFEST)
    previous = []
    if os.path.isfile(manifest_path):
        try:
            previous = _parse_manifest(manifest_path)
        except ResultSetError:
            pass
    _remove(manifest_path)
    for name, temporary in temporaries.items():
        os.replace(temporary, os.path.join(directory, name))
    for _, _, name in previous:
        if name not in files:
            _remove(os.path.join(directory, name))
    _sync_directory(directory)
    os.replace(os.path.join(directory, PENDING_MANIFEST), manifest_path)
    _sync_directory(directory)


def check_result_set(directory):
    """Raises ResultSetError naming the file when `directory` holds a set
    gacc wrote that is incomplete or does not match its manifest."""
    manifest_path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(manifest_path):
        if os.path.isfile(os.path.join(directory, PENDING_MANIFEST)):
            raise ResultSetError(
                "'%s' holds an incomplete result set: %s without %s (a "
                "write was interrupted; its files may mix two steps)" %
                (directory, PENDING_MANIFEST, MANIFEST))
        return  # written by hand
    for size, crc, name in _parse_manifest(manifest_path):
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            raise ResultSetError(
                "%s: listed in %s but missing or unreadable (the result set "
                "is incomplete)" % (path, manifest_path)) from None
        if len(data) != size:
            raise ResultSetError(
                "%s: %d bytes, %s lists %d (the file does not belong to the "
                "result set)" % (path, len(data), manifest_path, size))
        if zlib.crc32(data) != crc:
            raise ResultSetError(
                "%s: CRC-32 %08x, %s lists %08x (the file does not belong to "
                "the result set)" % (path, zlib.crc32(data), manifest_path,
                                     crc))
