"""What crosses between the judge and a candidate's process: the framed header and blobs
(`wire`) and one input set as data (`input_wire`)."""
