#!/usr/bin/env bash
# Seeds the fuzz corpora from the test fixtures (fuzz/corpus/TARGET, not
# committed), then `cargo +nightly fuzz run TARGET -- -max_total_time=600`.
# The first byte of an import or c_api input picks what the rest is (see
# the targets).
set -euo pipefail
cd "$(dirname "$0")/.."
f=tests/fixtures
c=fuzz/corpus
mkdir -p "$c/decode" "$c/graph" "$c/import" "$c/onnx" "$c/c_api" "$c/records" "$c/webdataset" "$c/folder" \
    "$c/cifar" "$c/mnist" "$c/mindrecord" "$c/celeba" "$c/coco" "$c/voc" "$c/yolo" "$c/tf_detection" "$c/json_target"
seed() { # seed TARGET PREFIX-BYTE FILE
    local name
    name="$(basename "$3")"
    { printf "\\x$2"; cat "$3"; } > "$1/$name.$2"
}
for j in "$f"/*.jpg "$f"/formats/*.png "$f"/formats/*.webp; do
    [ -e "$j" ] || continue
    cp "$j" "$c/decode/"
    seed "$c/c_api" 01 "$j"
done
for j in "$f"/graph/hf_*_preprocessor_config.json; do
    seed "$c/import" 00 "$j"
    seed "$c/c_api" 02 "$j"
done
for j in "$f"/graph/timm_*_config.json; do seed "$c/import" 01 "$j"; done
seed "$c/import" 02 "$f/graph/tflite_reshape_32x24.tflite"
seed "$c/import" 03 "$f/graph/mindspore_resnet_eval.mindir"
seed "$c/import" 04 "$f/graph/ultralytics_yolov8n_320.onnx"
cp "$f/graph/ultralytics_yolov8n_320.onnx" "$c/onnx/"
# Graph files, made by the CLI from a preset and an imported configuration.
tmp="$(mktemp -d)"
cargo run -q -p tensorprep-cli -- convert --from preset:imagenet-eval -o "$tmp/eval.tpp" 2>/dev/null
cargo run -q -p tensorprep-cli -- convert --from hf "$f/graph/hf_clip_preprocessor_config.json" \
    -o "$tmp/clip.tpp" 2>/dev/null
for g in "$tmp"/*.tpp; do
    cp "$g" "$c/graph/"
    seed "$c/c_api" 00 "$g"
done
rm -r "$tmp"
for r in "$f"/records/*.rec; do seed "$c/records" 00 "$r"; done
for r in "$f"/records/*.tfrecord; do seed "$c/records" 01 "$r"; done
for r in "$f"/records/*.tar; do seed "$c/records" 02 "$r"; done
for t in "$f"/records/*.tar; do cp "$t" "$c/webdataset/"; done
# Folder scripts: a class with an image; a class with a link to itself; two
# classes sharing a linked folder (2-byte steps: see fuzz_targets/folder.rs).
printf '\x00\x00\x0d\x00' > "$c/folder/one-image"
printf '\x00\x00\x0d\x00\x06\x01' > "$c/folder/self-link"
printf '\x00\x00\x0d\x00\x03\x00\x04\x00\x0d\x00\x06\x01' > "$c/folder/shared-link"
# CIFAR: byte 0 (even) five CIFAR-10 batches, (odd) CIFAR-100's train.bin.
{ printf '\x00'; cat "$f"/cifar/cifar-10-batches-bin/data_batch_{1,5}.bin; } > "$c/cifar/cifar10"
{ printf '\x01'; cat "$f"/cifar/cifar-100-binary/train.bin; } > "$c/cifar/cifar100"
# MNIST: the images file's length (2 bytes, little-endian), the images, the labels.
for m in "$f"/mnist/*/raw/train-images-idx3-ubyte; do
    n="$(basename "$(dirname "$(dirname "$m")")")"
    len="$(stat -c %s "$m")"
    # shellcheck disable=SC2059 # the inner printf writes the escapes the outer one turns into bytes
    { printf "$(printf '\\x%02x\\x%02x' $((len & 255)) $((len >> 8)))"; cat "$m" "${m%images-idx3-ubyte}labels-idx1-ubyte"; } \
        > "$c/mnist/$n"
done
# MindRecord files, their header's set renamed to the one file the target
# writes (fuzz.mindrecord), a byte before each for each option set.
for m in "$f"/mindrecord/*/*.mindrecord*; do
    for opt in 00 01 02; do
        { printf "\\x$opt"; python3 -c '
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h["shard_addresses"], h["shard_id"] = ["fuzz.mindrecord"], 0
t = json.dumps(h).encode()
sys.stdout.buffer.write(struct.pack("<Q", len(t)) + t + b[8 + len(t):])' "$m"; } > "$c/mindrecord/$(basename "$m").$opt"
    done
done
# CelebA: the split, identity, attribute and box files, each ended by a 0xff byte.
for t in list_eval_partition.txt identity_CelebA.txt list_attr_celeba.txt list_bbox_celeba.txt; do
    cat "$f/celeba/root/celeba/$t"
    printf '\xff'
done > "$c/celeba/fixture"
# COCO: the sample folder's instances file, and one naming the image the target writes (a.jpg).
cp "$f/coco/sample/instances.json" "$c/coco/sample"
printf '%s' '{"images": [{"id": 1, "file_name": "a.jpg", "height": 151, "width": 227}],
 "annotations": [{"id": 1, "image_id": 1, "category_id": 2, "bbox": [10, 20, 30, 40], "area": 1200, "iscrowd": 0,
   "segmentation": [[10, 20, 40, 20, 40, 60]]},
  {"id": 2, "image_id": 1, "category_id": 2, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 1,
   "segmentation": {"size": [151, 227], "counts": [5, 10, 34247]}}],
 "categories": [{"id": 2, "name": "b"}]}' > "$c/coco/a"
# VOC: one annotation with a difficult object.
printf '%s' '<annotation><size><width>227</width><height>151</height><depth>1</depth></size>
<object><name>cat</name><difficult>1</difficult><bndbox><xmin>3</xmin><ymin>4</ymin><xmax>50</xmax><ymax>60</ymax></bndbox></object>
<object><name>dog</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>227</xmax><ymax>151</ymax></bndbox></object></annotation>' > "$c/voc/a"
# YOLO: a label file of two objects.
printf '0 0.5 0.5 0.2 0.3\n3 0.1 0.9 0.05 0.1\n' > "$c/yolo/a"
# TFRecord object detection: each example of the fixtures (without the framing).
for r in "$f"/tf_detection/*.tfrecord; do
    python3 -c '
import struct, sys
b = open(sys.argv[1], "rb").read()
at, i = 0, 0
while at < len(b):
    n = struct.unpack("<Q", b[at:at + 8])[0]
    open("%s.%d" % (sys.argv[2], i), "wb").write(b[at + 12:at + 12 + n])
    at, i = at + 16 + n, i + 1' "$r" "$c/tf_detection/$(basename "$r")"
done
# WebDataset JSON targets: both shapes.
printf '%s' '{"boxes": [[1, 2, 30, 40]], "format": "XYXY", "labels": [3], "iscrowd": [0], "area": [1],
 "keypoints": [[[1, 2, 2]]], "height": 151, "width": 227, "image_id": 5}' > "$c/json_target/boxes"
printf '%s' '{"annotations": [{"bbox": [1, 2, 3, 4], "category_id": 7, "iscrowd": 1, "area": 12}]}' \
    > "$c/json_target/coco"
echo "seeded: $(for t in decode graph import onnx c_api records webdataset folder cifar mnist mindrecord celeba coco voc yolo tf_detection json_target; do printf '%s %s  ' "$t" "$(ls "$c/$t" | wc -l)"; done)"
