"""Scalar expressions: the expression compiler and the calls it compiles from their syntax."""
