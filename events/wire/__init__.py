"""The wire format: the Avro codec, the hash chain over encoded bytes, the envelope reader and
the projector's vectorised batch decode (kept here, beside the codec, because it is a second reader
of the same Avro bytes and must change whenever a schema does)."""
