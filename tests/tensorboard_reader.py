#!/usr/bin/python3
"""Reads TensorBoard event files as TensorBoard's own protos define them, independently of TrainLab's writer.

Framing checked with python3-crc32c (CRC-32C, masked); each record parsed with python3-protobuf against the
upstream field numbers (tensorboard/compat/proto/event.proto, summary.proto, plugins/hparams/plugin_data.proto).
Prints what it read as JSON; exits 1 naming the first bad record.
Usage: tensorboard_reader.py EVENTS_FILE...
"""
import json
import struct
import sys

import crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

F = descriptor_pb2.FieldDescriptorProto


def message(file, name, fields):
    m = file.message_type.add(name=name)
    for number, field_name, kind, extra in fields:
        f = m.field.add(name=field_name, number=number, type=kind,
                        label=F.LABEL_REPEATED if extra.get("repeated") else F.LABEL_OPTIONAL)
        if "type_name" in extra:
            f.type_name = extra["type_name"]
    return m


def build():
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(name="tb_subset.proto", package="tb", syntax="proto3",
                                              dependency=["google/protobuf/struct.proto"])
    message(file, "PluginData", [(1, "plugin_name", F.TYPE_STRING, {}), (2, "content", F.TYPE_BYTES, {})])
    message(file, "SummaryMetadata", [(1, "plugin_data", F.TYPE_MESSAGE, {"type_name": ".tb.PluginData"}),
                                      (2, "display_name", F.TYPE_STRING, {})])
    message(file, "HistogramProto", [(1, "min", F.TYPE_DOUBLE, {}), (2, "max", F.TYPE_DOUBLE, {}),
                                     (3, "num", F.TYPE_DOUBLE, {}), (4, "sum", F.TYPE_DOUBLE, {}),
                                     (5, "sum_squares", F.TYPE_DOUBLE, {}),
                                     (6, "bucket_limit", F.TYPE_DOUBLE, {"repeated": True}),
                                     (7, "bucket", F.TYPE_DOUBLE, {"repeated": True})])
    message(file, "Value", [(1, "tag", F.TYPE_STRING, {}), (2, "simple_value", F.TYPE_FLOAT, {}),
                            (5, "histo", F.TYPE_MESSAGE, {"type_name": ".tb.HistogramProto"}),
                            (7, "node_name", F.TYPE_STRING, {}),
                            (9, "metadata", F.TYPE_MESSAGE, {"type_name": ".tb.SummaryMetadata"})])
    message(file, "Summary", [(1, "value", F.TYPE_MESSAGE, {"type_name": ".tb.Value", "repeated": True})])
    message(file, "Event", [(1, "wall_time", F.TYPE_DOUBLE, {}), (2, "step", F.TYPE_INT64, {}),
                            (3, "file_version", F.TYPE_STRING, {}), (5, "summary", F.TYPE_MESSAGE, {"type_name": ".tb.Summary"})])
    entry = message(file, "SessionStartInfo", [(1, "hparams", F.TYPE_MESSAGE,
                                                {"type_name": ".tb.SessionStartInfo.HparamsEntry", "repeated": True}),
                                               (2, "model_uri", F.TYPE_STRING, {}), (4, "group_name", F.TYPE_STRING, {}),
                                               (5, "start_time_secs", F.TYPE_DOUBLE, {})])
    hp = entry.nested_type.add(name="HparamsEntry")
    hp.options.map_entry = True
    hp.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    hp.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".google.protobuf.Value")
    message(file, "SessionEndInfo", [(1, "status", F.TYPE_INT32, {}), (2, "end_time_secs", F.TYPE_DOUBLE, {})])
    message(file, "HParamsPluginData", [(1, "version", F.TYPE_INT32, {}),
                                        (3, "session_start_info", F.TYPE_MESSAGE, {"type_name": ".tb.SessionStartInfo"}),
                                        (4, "session_end_info", F.TYPE_MESSAGE, {"type_name": ".tb.SessionEndInfo"})])
    pool.Add(file)
    def cls(name):
        d = pool.FindMessageTypeByName("tb." + name)
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(d)
        return message_factory.MessageFactory(pool).GetPrototype(d)
    return cls("Event"), cls("HParamsPluginData")


def masked(data):
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        if len(data) - at < 12:
            raise ValueError(f"{path}: record at byte {at}: cut short in its header")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if length_crc != masked(header):
            raise ValueError(f"{path}: record at byte {at}: length CRC mismatch")
        body = data[at + 12:at + 12 + length]
        tail = data[at + 12 + length:at + 16 + length]
        if len(body) != length or len(tail) != 4:
            raise ValueError(f"{path}: record at byte {at}: cut short")
        if struct.unpack("<I", tail)[0] != masked(body):
            raise ValueError(f"{path}: record at byte {at}: data CRC mismatch")
        yield body
        at += 16 + length


def main():
    Event, HParamsPluginData = build()
    out = {"file_version": [], "scalars": {}, "histograms": {}, "hparams": {}, "session_end": [], "steps": []}
    try:
        for path in sys.argv[1:]:
            for body in records(path):
                e = Event()
                e.ParseFromString(body)
                if e.file_version:
                    out["file_version"].append(e.file_version)
                    continue
                out["steps"].append(e.step)
                for v in e.summary.value:
                    if v.metadata.plugin_data.plugin_name == "hparams":
                        p = HParamsPluginData()
                        p.ParseFromString(v.metadata.plugin_data.content)
                        if p.HasField("session_start_info"):
                            for k, val in p.session_start_info.hparams.items():
                                kind = val.WhichOneof("kind")
                                out["hparams"][k] = getattr(val, kind)
                        if p.HasField("session_end_info"):
                            out["session_end"].append(p.session_end_info.status)
                    elif v.HasField("histo"):
                        h = v.histo
                        out["histograms"].setdefault(v.tag, []).append(
                            [e.step, h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit), list(h.bucket)])
                    else:
                        out["scalars"].setdefault(v.tag, []).append([e.step, v.simple_value])
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
