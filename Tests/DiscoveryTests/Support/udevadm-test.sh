#!/bin/sh
# Runs `udevadm test` for one mock device with serialgps's rules installed, inside a private
# mount namespace: `udevadm test` really creates /dev links and writes /run/udev/data, so
# /run and /dev are fresh tmpfs mounts here and nothing reaches the host.
#
#   udevadm-test.sh RULES USER_RULES|- DEVICE FIXTURE...
#
# RULES is installed as /run/udev/rules.d/60-serialgps.rules, USER_RULES (unless "-") as
# 59-user.rules (a rule of the user's, sorting before ours); the fixtures are loaded with
# umockdev-run and DEVICE (/sys/class/tty/...) is tested. udevadm's output goes to stdout.
# Exit 77: cannot make the namespace (not root); anything else non-zero: setup failed.
set -eu

if [ "${1:-}" != "--inside" ]; then
  command -v unshare >/dev/null || { echo "unshare not found (Debian: util-linux)" >&2; exit 77; }
  exec unshare --mount --propagation private "$0" --inside "$@" || exit 77
fi
shift
rules=$1 user_rules=$2 device=$3
shift 3

mount -t tmpfs -o mode=0755 tmpfs /run 2>/dev/null || { echo "cannot mount tmpfs: not root?" >&2; exit 77; }
mkdir -p /run/host-dev /run/udev/rules.d
mount --rbind /dev /run/host-dev
mount -t tmpfs -o mode=0755 tmpfs /dev
for node in null zero random urandom tty; do
  touch "/dev/$node"
  mount --bind "/run/host-dev/$node" "/dev/$node"
done
# umockdev backs tty nodes with ptys: give the private /dev a pty multiplexer of its own.
mkdir /dev/pts
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
umount -l /run/host-dev

cp "$rules" /run/udev/rules.d/60-serialgps.rules
if [ "$user_rules" != "-" ]; then cp "$user_rules" /run/udev/rules.d/59-user.rules; fi

# The list of a for loop is read once: append "-d FIXTURE" and drop the bare FIXTURE.
for fixture; do
  set -- "$@" -d "$fixture"
  shift
done
umockdev-run "$@" -- udevadm test --action=add "$device" 2>&1
