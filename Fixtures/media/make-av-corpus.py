#!/usr/bin/env python3
"""Writes av-corpus/: small audio and video files for AudioVideoCorpusTests, each named for what it is.

The sound ones are what common encoders write (ffmpeg 5.1, LAME 3.100, SoX 14.4, as Debian 12 ships them), each a
fraction of a second: MP3 with and without tags, MPEG-2 and layer II, streamed WAV and AVI (sizes left at
0xFFFFFFFF by a writer that could not seek back), AIFF-C, faststart and fragmented MP4, MPEG-1 and DVD program
streams. The damaged ones are made
here from those: cut short, HTML appended or put after a valid header (what an attacker's probe sent), a part a
player needs removed. Run from this directory with ffmpeg, lame and sox installed; the tests need none of them.
The bytes depend on the encoders' versions (and SoX's AIFF comment holds the time). AudioVideoCorpusTests lists the outcome expected of every file."""
import os
import shutil
import struct
import subprocess
import tempfile

OUT = "av-corpus"
HTML = (b"<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>"
        + b"<p>The page you asked for is not here.</p>" * 80 + b"</body></html>\n")[:3000]


def run(*arguments):
    subprocess.run(list(arguments), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ffmpeg(*arguments):
    run("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *arguments)


def read(name):
    with open(os.path.join(OUT, name), "rb") as f:
        return f.read()


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def ape_tag(items):
    """An APEv2 tag with a header and a footer around `items` (key, value)."""
    body = b"".join(struct.pack("<II", len(v), 0) + k + b"\0" + v for k, v in items)
    def field(flags):
        return b"APETAGEX" + struct.pack("<IIII", 2000, len(body) + 32, len(items), flags) + b"\0" * 8
    return field(0xA0000000) + body + field(0x80000000)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    with tempfile.TemporaryDirectory() as scratch:
        tone = os.path.join(scratch, "tone.wav")
        ffmpeg("-f", "lavfi", "-i", "sine=frequency=660:duration=0.3", "-ac", "1", "-ar", "22050", tone)
        # Sound: MP3.
        run("lame", "--quiet", "-V", "6", tone, os.path.join(OUT, "mp3-lame-vbr.mp3"))
        run("lame", "--quiet", "-b", "24", "--tt", "Chime", "--ta", "RichPush", "--add-id3v2", tone,
            os.path.join(OUT, "mp3-lame-id3v1-id3v2.mp3"))
        ffmpeg("-i", tone, "-c:a", "mp2", "-b:a", "32k", "-f", "mp2", os.path.join(OUT, "mp3-layer2.mp3"))
        run("lame", "--quiet", "-b", "24", "-t", tone, os.path.join(scratch, "bare.mp3"))
        with open(os.path.join(scratch, "bare.mp3"), "rb") as f:
            bare = f.read()
        write("mp3-ape-tag.mp3", bare + ape_tag([(b"Title", b"Chime")]))
        # Sound: WAV, AIFF.
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", tone, "-ar", "8000", "-c:a", "pcm_s16le",
                        "-t", "0.2", "-f", "wav", "-"], check=True, stdout=open(os.path.join(OUT, "wav-streamed.wav"), "wb"))
        ffmpeg("-i", tone, "-ar", "8000", "-c:a", "pcm_u8", "-t", "0.200125", os.path.join(OUT, "wav-odd-size.wav"))
        run("sox", tone, "-r", "8000", os.path.join(OUT, "aiff-sox.aifc"), "trim", "0", "0.2")
        run("sox", tone, "-r", "8000", "-b", "8", os.path.join(OUT, "aiff-sox.aiff"), "trim", "0", "0.2")
        # Sound: MP4, M4A, AVI.
        video = ["-f", "lavfi", "-i", "testsrc=duration=0.3:size=64x48:rate=10", "-c:v", "libx264", "-pix_fmt",
                 "yuv420p", "-preset", "ultrafast"]
        ffmpeg("-i", tone, "-c:a", "aac", "-b:a", "16k", "-movflags", "+faststart",
               os.path.join(OUT, "m4a-faststart.m4a"))
        ffmpeg(*video, "-movflags", "+faststart", os.path.join(OUT, "mp4-faststart.mp4"))
        ffmpeg(*video, "-movflags", "+frag_keyframe+empty_moov", os.path.join(OUT, "mp4-fragmented.mp4"))
        ffmpeg(*video, os.path.join(scratch, "moov-last.mp4"))
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                        "testsrc=duration=0.3:size=64x48:rate=10", "-c:v", "mpeg4", "-f", "avi", "-"], check=True,
                       stdout=open(os.path.join(OUT, "avi-streamed.avi"), "wb"))
        ffmpeg("-f", "lavfi", "-i", "testsrc=duration=0.3:size=64x48:rate=10", "-c:v", "mpeg4",
               os.path.join(scratch, "clip.avi"))
        # Sound: MPEG-1 and MPEG-2 (DVD) program streams.
        ffmpeg("-f", "lavfi", "-i", "testsrc=duration=0.2:size=64x48:rate=25", "-c:v", "mpeg1video", "-f", "mpeg",
               os.path.join(OUT, "mpeg1-ffmpeg.mpg"))
        ffmpeg("-f", "lavfi", "-i", "testsrc=duration=0.2:size=64x48:rate=25", "-i", tone, "-c:v", "mpeg2video",
               "-c:a", "mp2", "-shortest", "-f", "dvd", os.path.join(OUT, "mpeg2-ffmpeg-dvd.mpg"))
        with open(os.path.join(scratch, "moov-last.mp4"), "rb") as f:
            moov_last = f.read()
        with open(os.path.join(scratch, "clip.avi"), "rb") as f:
            avi = f.read()

    # Damaged, shown in part: cut short, or junk where a player skips it.
    m4a = read("m4a-faststart.m4a")
    write("m4a-truncated.m4a", m4a[:len(m4a) * 2 // 3])
    wav = read("wav-odd-size.wav")
    write("wav-truncated.wav", wav[:len(wav) // 2])
    aiff = read("aiff-sox.aiff")
    write("aiff-truncated.aiff", aiff[:len(aiff) // 2])
    write("avi-truncated.avi", avi[:len(avi) * 3 // 4])
    mp3 = read("mp3-lame-vbr.mp3")
    write("mp3-truncated.mp3", mp3[:len(mp3) // 2 + 7])
    dvd = read("mpeg2-ffmpeg-dvd.mpg")
    write("mpeg2-truncated.mpg", dvd[:len(dvd) * 2 // 3 + 5])
    write("mp3-junk-between.mp3", bare[:len(bare) // 2] + HTML[:300] + bare[len(bare) // 2:])
    write("mp4-trailing-html.mp4", read("mp4-faststart.mp4") + HTML)
    # Damaged, refused: what the probe sent (a header, then HTML), and files without a part a player needs.
    write("mp3-frame-html.mp3", bytes([0xFF, 0xFB, 0x90, 0x64]) + HTML)
    # libmagic calls ID3 audio/mpeg only when a frame header follows the tag.
    write("mp3-id3-html.mp3", b"ID3\x04\x00\x00\x00\x00\x00\x0a" + b"\0" * 10 + bytes([0xFF, 0xFB, 0x90, 0x64]) + HTML)
    write("wav-header-html.wav", b"RIFF" + struct.pack("<I", len(HTML) + 4) + b"WAVE" + HTML)
    write("mp4-ftyp-html.mp4", moov_last[:struct.unpack(">I", moov_last[:4])[0]] + HTML)
    write("mpeg2-pack-html.mpg", dvd[:14] + HTML)
    write("mp4-no-moov.mp4", moov_last[:moov_last.rindex(b"moov") - 4])
    fmt_end = 12 + 8 + struct.unpack("<I", wav[16:20])[0]
    write("wav-no-fmt.wav", wav[:4] + struct.pack("<I", len(wav) - fmt_end + 4) + b"WAVE" + wav[fmt_end:])
    comm = aiff.index(b"COMM")
    comm_end = comm + 8 + struct.unpack(">I", aiff[comm + 4:comm + 8])[0]
    write("aiff-no-comm.aiff", b"FORM" + struct.pack(">I", len(aiff) - 8 - (comm_end - comm)) + aiff[8:comm]
          + aiff[comm_end:])


if __name__ == "__main__":
    main()
