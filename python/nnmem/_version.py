# Kept equal to project(VERSION) in the top CMakeLists.txt (a test checks).
__version__ = "0.1.0"
