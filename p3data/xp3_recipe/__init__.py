"""xP3 and xP3mt, the multilingual mixtures mT0 and BLOOMZ were finetuned on: the recipe that
built them (`bigscience-workshop/bigscience` `data/xp3/prepare_xp3_train.py`) as pure data and
functions. Kept light: no seqio, Beam or TensorFlow here, nothing loaded until asked for."""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
