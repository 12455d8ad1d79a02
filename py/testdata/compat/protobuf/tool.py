from google.protobuf import descriptor_pb2, json_format, struct_pb2, timestamp_pb2, wrappers_pb2


def execute(inp):
    s = struct_pb2.Struct()
    s.update(inp["struct"])
    data = s.SerializeToString(deterministic=True)
    back = struct_pb2.Struct()
    back.ParseFromString(data)
    ts = timestamp_pb2.Timestamp()
    ts.FromJsonString(inp["timestamp"])
    fd = descriptor_pb2.FileDescriptorProto(name="demo.proto", package="demo")
    msg = fd.message_type.add(name="Item")
    msg.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64)
    msg.field.add(name="label", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    return {
        "bytes": data.hex(),
        "roundtrip": json_format.MessageToDict(back),
        "json": json_format.MessageToJson(s, sort_keys=True, indent=1),
        "timestamp": [ts.seconds, ts.nanos, ts.ToJsonString()],
        "descriptor": fd.SerializeToString().hex(),
        "text": str(fd),
        "wrapper": json_format.MessageToJson(wrappers_pb2.Int64Value(value=2 ** 40)),
    }
