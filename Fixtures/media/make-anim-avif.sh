#!/usr/bin/env bash
# Writes anim.avif: an animated AVIF (an image sequence, ftyp brand 'avis') of three 16 x 12 frames, red, green
# and blue, two a second. libvips 8.14's own sniffer for HEIF does not know the 'avis' brand, and sent such files to
# ImageMagick's TGA decoder; RichPush reads them with heifload only, which refuses them.
# Needs avifenc (Debian's libavif-bin) and libvips's vips (libvips-tools); only to make the fixture. Run from this
# directory.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
colours=("255 0 0" "0 255 0" "0 0 255")
for index in 0 1 2; do
    vips black "$work/black.v" 16 12 --bands 3
    vips linear "$work/black.v" "$work/frame$index.png" "1 1 1" "${colours[$index]}" --uchar
done
avifenc --speed 10 --fps 2 "$work/frame0.png" "$work/frame1.png" "$work/frame2.png" anim.avif >/dev/null
