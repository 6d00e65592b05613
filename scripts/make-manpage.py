#!/usr/bin/env python3
"""Writes serialgps(1) in roff to standard output, made from the commands' own help.

    scripts/make-manpage.py BINARY VERSION DATE

BINARY is the built `serialgps` (it is run: `help`, then `COMMAND --help` for each command
`help` lists), so the page says exactly what the commands say. `make deb` calls it; DATE is
the package's date (YYYY-MM-DD). Help texts are plain text: paragraphs, `options:`-style
headings, and indented items (`  --name ARG   what it does`, continued on deeper-indented
lines); other indented lines (examples) are kept as they are.
"""

import re
import subprocess
import sys

ITEM = re.compile(r"^( {2,})([-A-Za-z][^ ]*(?: [^ ]+)*?)(?: {2,}(.*))?$")


def escape(text):
    """Text as roff: backslashes, hyphens as minus signs (options copy-paste), non-ASCII as
    named glyphs, and a leading period or quote kept from being read as a request."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\e")
        elif char == "-":
            out.append("\\-")
        elif char == "\u2026":
            out.append("...")
        elif ord(char) > 127:
            out.append("\\[u%04X]" % ord(char))
        else:
            out.append(char)
    line = "".join(out)
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def run(binary, *arguments):
    result = subprocess.run([binary, *arguments], capture_output=True, text=True,
                            env={"SWIFT_BACKTRACE": "enable=no", "PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        sys.exit("make-manpage: %s %s exited %d: %s" % (
            binary, " ".join(arguments), result.returncode, result.stderr.strip()))
    return result.stdout


def commands(binary):
    """(name, usage, summary) for every command `serialgps help` lists."""
    lines = run(binary, "help").splitlines()
    found = []
    try:
        start = lines.index("commands:") + 1
    except ValueError:
        sys.exit("make-manpage: `%s help` has no 'commands:' list" % binary)
    index = start
    while index < len(lines) and lines[index].startswith("  "):
        usage = lines[index].strip()
        summary = lines[index + 1].strip() if index + 1 < len(lines) else ""
        found.append((usage.split()[0], usage, summary))
        index += 2
    if not found:
        sys.exit("make-manpage: `%s help` lists no command" % binary)
    return found


def help_body(text):
    """roff for one command's --help, its `usage:` line left out (the caller shows it)."""
    lines = text.rstrip("\n").splitlines()
    if lines and lines[0].startswith("usage:"):
        lines = lines[1:]
    out = []
    paragraph = []
    literal = []
    item_open = False

    def flush_paragraph():
        if paragraph:
            out.append(".PP")
            out.extend(escape(line) for line in paragraph)
            paragraph.clear()

    def flush_literal():
        if literal:
            out.append(".PP")
            out.append(".nf")
            out.extend(escape(line) for line in literal)
            out.append(".fi")
            literal.clear()

    item_indent = None
    for line in lines:
        if not line.strip():
            flush_paragraph()
            flush_literal()
            item_open = False
            continue
        if not line.startswith(" "):
            flush_literal()
            if item_open:
                item_open = False
            if re.fullmatch(r"[a-z][a-z ]*:", line):
                flush_paragraph()
                out += [".PP", ".B " + escape(line[:-1].capitalize())]
                continue
            paragraph.append(line)
            continue
        flush_paragraph()
        indent = len(line) - len(line.lstrip(" "))
        if item_open and indent > item_indent:
            out.append(escape(line.strip()))
            continue
        match = ITEM.match(line)
        if match and match.group(3) is not None:
            flush_literal()
            out.append(".TP")
            out.append(".B " + escape(match.group(2)))
            out.append(escape(match.group(3)))
            item_open = True
            item_indent = len(match.group(1))
        elif match and line.strip().startswith("-"):
            flush_literal()
            out.append(".TP")
            out.append(".B " + escape(line.strip()))
            item_open = True
            item_indent = indent
        else:
            item_open = False
            literal.append(line.strip())
    flush_paragraph()
    flush_literal()
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    binary, version, date = sys.argv[1:]
    page = [
        '.TH SERIALGPS 1 "%s" "serialgps %s" "User Commands"' % (date, version),
        ".SH NAME",
        "serialgps \\- GPS receiver driver that powers the receiver only while someone listens",
        ".SH SYNOPSIS",
    ]
    listed = commands(binary)
    for name, usage, _ in listed:
        rest = usage[len(name):].strip()
        page += [".HP", "\\fBserialgps %s\\fR %s" % (escape(name), escape(rest))]
    page += [
        ".HP", ".B serialgps", "\\fB\\-\\-version\\fR | \\fBhelp\\fR",
        ".SH DESCRIPTION",
        "\\fBserialgps\\fR makes a serial or USB GPS receiver (u\\-blox, MediaTek/Quectel, SiRF",
        "or plain NMEA) behave like a well\\-mannered location service: the receiver stays in",
        "standby until the first subscriber wants a position, fixes stream to every",
        "subscriber while anyone listens, and the receiver is sent its standby commands when",
        "the last one leaves.",
        ".PP",
        "\\fBserialgps serve\\fR speaks gpsd's JSON protocol (port 2947), so gpsd's clients",
        "work unchanged; the Debian package starts it as \\fBserialgps.service\\fR when a known",
        "receiver is plugged in.",
        ".PP",
        "Each command is described below with the text its \\fB\\-\\-help\\fR option prints.",
        ".SH COMMANDS",
    ]
    for name, usage, summary in listed:
        page += [".SS serialgps " + escape(name), escape(summary), ".PP",
                 ".B serialgps " + escape(usage)]
        page += help_body(run(binary, name, "--help"))
    page += [
        ".SH FILES",
        ".TP", ".I /usr/lib/udev/rules.d/60\\-serialgps.rules",
        "Access (group dialout), ModemManager kept away, the chipset family and a stable",
        "link \\fI/dev/serialgps/SERIAL\\fR for known receivers.",
        ".TP", ".I /usr/lib/udev/rules.d/61\\-serialgps\\-serve.rules",
        "Starts \\fBserialgps.service\\fR when such a receiver is plugged in.",
        ".TP", ".I /usr/lib/systemd/system/serialgps.service",
        "\\fBserialgps serve\\fR as a service (loopback, port 2947). It conflicts with",
        "\\fBgpsd.service\\fR and \\fBgpsd.socket\\fR: see",
        "\\fI/usr/share/doc/serialgps/README.Debian\\fR.",
        ".TP", ".I /usr/share/serialgps/ublox\\-m8\\-drive.nmea",
        "The recording \\fBserialgps demo\\fR replays.",
        ".SH SEE ALSO",
        ".BR gpsd (8),",
        ".BR gpspipe (1),",
        ".BR cgps (1),",
        ".BR udevadm (8),",
        ".BR systemctl (1)",
    ]
    sys.stdout.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
