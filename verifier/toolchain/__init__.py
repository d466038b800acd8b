"""toolchain"""
