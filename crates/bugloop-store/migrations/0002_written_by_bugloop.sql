-- Which comments bugloop itself wrote, recorded by the code path that wrote them (never inferred
-- from the author's name, which a developer can choose freely). NULL for comments stored before
-- this column existed: for those the author's name is all there is.
ALTER TABLE comments ADD COLUMN by_bugloop INTEGER;
