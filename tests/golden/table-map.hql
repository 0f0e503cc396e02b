OrderedMap(["robin", "barn-owl"], [1, 2]) | table
