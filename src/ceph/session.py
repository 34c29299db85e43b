# The `ceph` CLI's own machinery (librados and ceph_argparse, from Debian's ceph-common) kept
# connected, so a question costs a round trip instead of a Python start and a new connection.
#
# argv[1]: JSON {"conf", "keyring", "name", "connect_timeout"} (null: Ceph's default).
# Out, one JSON object per line: first {"ready": true} or {"failed": text, "rc": errno} or
# {"unusable": text}; then one {"id", "rc", "out", "outs"} per request, in any order (`outs`:
# the CLI's stderr).
# In, one JSON object per line: {"id": n, "args": ["osd", "ok-to-stop", "0"]}.
# Each request is answered on its own thread: a mgr command without a mgr waits forever and must
# not hold the others back; the caller bounds every call and ends the process past it.
import errno
import json
import sys
import threading

write_lock = threading.Lock()


def say(obj):
    line = json.dumps(obj) + "\n"
    with write_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def literal_prefixes(sigdict, prefix_type):
    # Each command's leading literal words ("osd ok-to-stop" of "osd ok-to-stop <ids>..."):
    # validating against all ~600 commands takes ~50 ms, against those these words select well
    # under 1 ms. Only `CephPrefix` arguments are literal: a choice (`octopus|pacific|reef`) is
    # an argument even where it is printed bare.
    prefixes = []
    for key, command in sigdict.items():
        words = []
        for desc in command["sig"]:
            if desc.t is not prefix_type:
                break
            words.append(desc.instance.prefix)
        prefixes.append((tuple(words), key))
    return prefixes


class Commands:
    # The monitors' command descriptions, read again when a command does not validate: a
    # monitor upgraded while the session lives knows commands and values the old one did not
    # (`osd require-osd-release reef` after Pacific → Reef).
    def __init__(self, cluster, json_command, parse_json_funcsigs, prefix_type):
        self.cluster = cluster
        self.json_command = json_command
        self.parse = parse_json_funcsigs
        self.prefix_type = prefix_type
        self.lock = threading.Lock()
        self.sigdict, self.prefixes = self.read()

    def read(self):
        rc, out, outs = self.json_command(self.cluster, prefix="get_command_descriptions")
        if rc:
            raise CommandsUnread(outs, -rc)
        sigdict = self.parse(out.decode("utf-8"), "cli")
        return sigdict, literal_prefixes(sigdict, self.prefix_type)

    def refresh(self):
        with self.lock:
            self.sigdict, self.prefixes = self.read()

    def candidates(self, args):
        with self.lock:
            sigdict, prefixes = self.sigdict, self.prefixes
        return {key: sigdict[key] for words, key in prefixes
                if tuple(args[:len(words)]) == words}


class CommandsUnread(Exception):
    def __init__(self, outs, rc):
        super().__init__(outs)
        self.rc = rc


def answer(cluster, commands, json_command, validate_command, request):
    try:
        args = request["args"]
        valid = validate_command(commands.candidates(args), args)
        if not valid:
            commands.refresh()
            valid = validate_command(commands.candidates(args), args)
        if not valid:
            rc, out, outs = -errno.EINVAL, b"", "invalid command"
        else:
            valid["format"] = "json"
            rc, out, outs = json_command(cluster, target=("mon", ""), argdict=valid)
    except Exception as e:  # an answer, never a dead session
        rc, out, outs = -errno.EIO, b"", str(e)
    # On failure stderr reads as the CLI's: "Error EBUSY: <outs>".
    say({
        "id": request["id"],
        "rc": rc,
        "out": out.decode("utf-8", "replace"),
        "outs": "Error {0}: {1}".format(errno.errorcode.get(-rc, "Unknown"), outs)
        if rc < 0 else outs,
    })


def main():
    settings = json.loads(sys.argv[1])
    try:
        import rados
        from ceph_argparse import (CephPrefix, json_command, parse_json_funcsigs,
                                   validate_command)
    except ImportError as e:
        say({"unusable": str(e)})
        return 3
    try:
        cluster = rados.Rados(name=settings["name"] or "client.admin",
                              conffile=settings["conf"] or "")
        if settings["keyring"]:
            cluster.conf_set("keyring", settings["keyring"])
        cluster.connect(timeout=settings["connect_timeout"])
        commands = Commands(cluster, json_command, parse_json_funcsigs, CephPrefix)
    except CommandsUnread as e:
        say({"failed": "cannot read the command descriptions: " + str(e), "rc": e.rc})
        return 1
    except rados.Error as e:
        say({"failed": str(e), "rc": getattr(e, "errno", None) or errno.EIO})
        return 1
    say({"ready": True})
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            threading.Thread(
                target=answer,
                args=(cluster, commands, json_command, validate_command, request),
                daemon=True,
            ).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
