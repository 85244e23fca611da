ANNOTATIONS = {"dev": "data/dev/annotations.csv", "test": "data/test/annotations.csv"}
