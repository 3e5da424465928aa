"""Generated gRPC code of grstats.proto (package grstats.v1): regenerate with make proto."""
