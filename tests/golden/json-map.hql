SortedMap(["robin", "barn-owl"], [1.5, 2.0]) | json
