from methods.KNN import KNN
from methods.MyMethod import MyMethod


def all_method_handlers():
    return {"my_method": MyMethod, "knn": KNN}
